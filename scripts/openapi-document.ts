/**
 * docs/openapi.json as it should read: the OpenAPI document of the route table at the default base path, the
 * document `GET /api/v1/openapi.json` serves. Shared by `npm run openapi:generate` and the test that fails when the
 * committed file is stale (test/unit/routes/openapi.test.ts).
 */

import { version } from '../package.json'
import { routes } from '../src/routes'
import { buildOpenApiDocument } from '../src/routes/openapi.document'

export const OPENAPI_FILE = 'docs/openapi.json'

export const openApiFileText = (): string => `${JSON.stringify(buildOpenApiDocument(routes, { serverUrl: '/api/v1', version }), null, 2)}\n`
