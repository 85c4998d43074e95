/**
 * The `POST /responses` body as the gateway accepts it: the engine's body (src/engine/request.schemas.ts) with every
 * `plugins` entry checked by its plugin's own schema (plugins/schemas.ts). Composed here, above the engine, so the
 * engine names no plugin; the routes that take a Responses body and the server tools that build one parse with it.
 */

import { responsesRequestSchema } from '../engine/request.schemas'
import { PluginSchema } from './plugins/schemas'

export const ResponsesRequestSchema = responsesRequestSchema(PluginSchema)
