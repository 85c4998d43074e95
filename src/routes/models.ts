/**
 * The catalog, as OpenRouter publishes it: `GET /models`, `GET /model/{author}/{slug}`, `GET /models/count`,
 * `GET /models/{author}/{slug}/endpoints`, `GET /endpoints/zdr`, `GET /images/models` and `GET /providers`;
 * and `GET /models/user`, the models the calling key can run. Like OpenRouter's, they answer without a key (docs/decisions.md, "Model and provider
 * catalog"), from text built once per gateway, with an ETag so clients can revalidate for free.
 */

import { cachedJsonReply } from '../core/cached-json'
import { NotFoundError } from '../core/errors'
import { json, jsonTextReply } from '../core/reply'
import { loadCallerScope } from '../engine/caller-scope'
import { usableModels } from '../engine/usable-models'
import { defineRoute } from '../pipeline/route'
import { basePathOf, CATALOG_CACHE_CONTROL, catalogAnswers } from './models.catalog'
import {
  CountModelsQuerySchema,
  ListModelsQuerySchema,
  ListUserModelsQuerySchema,
  ModelParamsSchema,
  type ListModelsQuery,
} from './models.schemas'

const MODELS_PATH = '/models'

export const listModels = defineRoute({
  method: 'GET',
  path: MODELS_PATH,
  auth: 'none',
  query: ListModelsQuerySchema,
  async handle({ request, query, runtime }) {
    // The answer links to each model's endpoints, under the gateway's base path.
    return cachedJsonReply(request, await catalogAnswers(runtime.inference).list(query, basePathOf(request, MODELS_PATH)), CATALOG_CACHE_CONTROL)
  },
})

export const listModelEndpoints = defineRoute({
  method: 'GET',
  path: '/models/:author/:slug/endpoints',
  auth: 'none',
  params: ModelParamsSchema,
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
  async handle({ request, runtime }) {
    return cachedJsonReply(request, await catalogAnswers(runtime.inference).providers(), CATALOG_CACHE_CONTROL)
  },
})

const MODEL_PATH = '/model/:author/:slug'

export const getModel = defineRoute({
  method: 'GET',
  path: MODEL_PATH,
  auth: 'none',
  params: ModelParamsSchema,
  async handle({ request, params, runtime }) {
    const answer = catalogAnswers(runtime.inference).model(`${params.author}/${params.slug}`, basePathOf(request, MODEL_PATH))
    if (!answer) throw new NotFoundError(`Model "${params.author}/${params.slug}" not found`)
    return cachedJsonReply(request, await answer, CATALOG_CACHE_CONTROL)
  },
})

export const countModels = defineRoute({
  method: 'GET',
  path: '/models/count',
  auth: 'none',
  query: CountModelsQuerySchema,
  async handle({ query, runtime }) {
    return json({ data: { count: catalogAnswers(runtime.inference).count(query.output_modalities) } }, 200, { 'cache-control': CATALOG_CACHE_CONTROL })
  },
})

const USER_MODELS_PATH = '/models/user'

/** The models the calling key can run: its workspace's BYOK keys and the gateway's shared ones decide. */
export const listUserModels = defineRoute({
  method: 'GET',
  path: USER_MODELS_PATH,
  auth: 'any',
  query: ListUserModelsQuerySchema,
  async handle({ request, query, caller, repositories, runtime }) {
    const basePath = basePathOf(request, USER_MODELS_PATH)
    // The key's guardrails narrow what it may run, as they narrow its requests' routing.
    const { credentials, policy } = await loadCallerScope(repositories, caller, runtime.inference.stages.plan.loadScope)
    const isUsable = usableModels(runtime.inference, {
      credentials,
      callerKeyHash: caller.key.hash,
      callerUserId: caller.key.creatorUserId,
      ...(policy ? { policy } : {}),
    })
    const answer = await catalogAnswers(runtime.inference).list(query as ListModelsQuery, basePath, isUsable)
    // Per caller and as changeable as their BYOK keys: never cached by anyone.
    return jsonTextReply(answer.text, 200, { 'cache-control': 'private, no-store' })
  },
})

export const listZeroDataRetentionEndpoints = defineRoute({
  method: 'GET',
  path: '/endpoints/zdr',
  auth: 'none',
  async handle({ request, runtime }) {
    return cachedJsonReply(request, await catalogAnswers(runtime.inference).zeroDataRetentionEndpoints(), CATALOG_CACHE_CONTROL)
  },
})

const IMAGE_MODELS_PATH = '/images/models'

export const listImageModels = defineRoute({
  method: 'GET',
  path: IMAGE_MODELS_PATH,
  auth: 'none',
  async handle({ request, runtime }) {
    return cachedJsonReply(request, await catalogAnswers(runtime.inference).imageModels(basePathOf(request, IMAGE_MODELS_PATH)), CATALOG_CACHE_CONTROL)
  },
})
