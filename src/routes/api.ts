/**
 * The API describing itself, answered without a key: `GET /` (the base path, with or without its slash) is a small
 * index of where things are, and `GET /openapi.json` the OpenAPI 3.1 document of every route the gateway serves
 * (./openapi.document.ts). Neither says anything a deployment keeps private: the routes are the package's own.
 */

import { version } from '../../package.json'
import { defineRoute, json, type AnyRoute } from '../pipeline/route'
import { buildOpenApiDocument } from './openapi.document'

/** The base path a request to `route` came under: its path with the route's own path taken off. */
const basePathOf = (request: Request, routePath: string): string => {
  const pathname = new URL(request.url).pathname.replace(/\/+$/, '')
  return routePath === '/' ? pathname : pathname.slice(0, pathname.length - routePath.length)
}

export const apiIndex = defineRoute({
  method: 'GET',
  path: '/',
  auth: 'none',
  async handle({ request }) {
    const base = basePathOf(request, '/')
    return json({
      name: 'modelgate',
      version,
      links: {
        openapi: `${base}/openapi.json`,
        models: `${base}/models`,
        health: `${base}/health`,
        readiness: `${base}/health/ready`,
      },
    })
  },
})

/**
 * `GET /openapi.json` over the routes `served` returns (the route table, read when first asked, so this route and the
 * index describe themselves too). Built once per base path a request came under, then the same text every time.
 */
export const openApiDocumentRoute = (served: () => readonly AnyRoute[]) => {
  const documents = new Map<string, ReturnType<typeof buildOpenApiDocument>>()
  return defineRoute({
    method: 'GET',
    path: '/openapi.json',
    auth: 'none',
    async handle({ request }) {
      const serverUrl = basePathOf(request, '/openapi.json')
      let document = documents.get(serverUrl)
      if (!document) {
        document = buildOpenApiDocument(served(), { serverUrl: serverUrl === '' ? '/' : serverUrl, version })
        documents.set(serverUrl, document)
      }
      return json(document)
    },
  })
}
