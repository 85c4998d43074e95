/**
 * The catalog, as OpenRouter publishes it: `GET /models`, `GET /models/{author}/{slug}/endpoints` and
 * `GET /providers`. Like OpenRouter's, they answer without a key (docs/decisions.md, "Model and provider
 * catalog"), from text built once per gateway, with an ETag so clients can revalidate for free.
 */

import { cachedJsonReply } from '../core/cached-json'
import { NotFoundError } from '../core/errors'
import { defineRoute } from '../pipeline/route'
import { catalogAnswers } from './models.catalog'
import { ListModelsQuerySchema, ModelEndpointsParamsSchema, NoQuerySchema } from './models.schemas'

// The same for every caller and fixed for the gateway's life; a minute bounds how long a redeploy goes unseen.
const CATALOG_CACHE_CONTROL = 'public, max-age=60'

const MODELS_PATH = '/models'

export const listModels = defineRoute({
  method: 'GET',
  path: MODELS_PATH,
  auth: 'none',
  query: ListModelsQuerySchema,
  async handle({ request, query, runtime }) {
    // The gateway's base path, as the request reached it: the answer links to each model's endpoints.
    const basePath = new URL(request.url).pathname.replace(/\/+$/, '').slice(0, -MODELS_PATH.length)
    return cachedJsonReply(request, await catalogAnswers(runtime.inference).list(query, basePath), CATALOG_CACHE_CONTROL)
  },
})

export const listModelEndpoints = defineRoute({
  method: 'GET',
  path: '/models/:author/:slug/endpoints',
  auth: 'none',
  params: ModelEndpointsParamsSchema,
  query: NoQuerySchema,
  async handle({ request, params, runtime }) {
    const answer = catalogAnswers(runtime.inference).endpoints(`${params.author}/${params.slug}`)
    if (!answer) throw new NotFoundError(`Model "${params.author}/${params.slug}" not found`)
    return cachedJsonReply(request, await answer, CATALOG_CACHE_CONTROL)
  },
})

export const listProviders = defineRoute({
  method: 'GET',
  path: '/providers',
  auth: 'none',
  query: NoQuerySchema,
  async handle({ request, runtime }) {
    return cachedJsonReply(request, await catalogAnswers(runtime.inference).providers(), CATALOG_CACHE_CONTROL)
  },
})
