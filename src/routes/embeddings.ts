/**
 * `POST /embeddings` (OpenAI's shape, OpenRouter's extensions) and `GET /embeddings/models`. The engine
 * plans, runs, prices and limits the request (src/engine/embeddings.ts); the ledger records it as a
 * generation of api `embeddings`; the writer encodes the vectors (docs/decisions.md, Embeddings).
 */

import { cachedJsonReply } from '../core/cached-json'
import { json } from '../core/reply'
import { prepareEmbeddings, runEmbeddings, type EmbeddingsAnswer, type EmbeddingsRequestBody } from '../engine/embeddings'
import { createGenerationRecorder, prepareRecorded } from '../ledger/generation-record'
import { defineRoute } from '../pipeline/route'
import { chatCompletionId } from '../formats/chat-completions/shared'
import { toEmbeddingsWire } from '../formats/embeddings/json'
import { EmbeddingModelsQuerySchema, EmbeddingsBodySchema } from './embeddings.schemas'
import { INFERENCE_BODY_LIMIT, withCacheHeaders } from './inference'
import { cacheTtlHeader } from './response-cache.schemas'
import { answerEmbeddingsCached } from '../features/response-cache/embeddings'
import { cacheDirectiveFor } from '../features/response-cache/stage'
import { RESPONSE_CACHE } from '../features/response-cache/request-state'
import { basePathOf, CATALOG_CACHE_CONTROL, catalogAnswers } from './models.catalog'
import type { ListModelsQuery } from './models.schemas'
import { sessionIdOf } from './session-id'

export const createEmbeddings = defineRoute({
  method: 'POST',
  path: '/embeddings',
  auth: 'inference',
  bodyLimit: INFERENCE_BODY_LIMIT,
  body: EmbeddingsBodySchema,
  isAccessLogged: true,
  async handle({ body, caller, repositories, requestId, clientSignal, runtime, access, request, now }) {
    const service = runtime.inference
    // spec session_id: the body wins over the header.
    const sessionId = sessionIdOf(body.session_id, request.headers)
    const arrival = { arrivedAt: now(), startedAt: performance.now() }
    const requestedTtlSeconds = cacheTtlHeader(request.headers)
    const context = { caller, repositories, requestId, signal: clientSignal, isMetadataRequested: false, ...(sessionId === undefined ? {} : { sessionId }) }
    const generation = { api: 'embeddings' as const, caller, requestId, sessionId, ...arrival }
    const embeddingsBody = body as EmbeddingsRequestBody
    const prepared = await prepareRecorded(runtime.ledger, service, generation, embeddingsBody, () => prepareEmbeddings(service, context, embeddingsBody))
    const cache = cacheDirectiveFor(prepared.request, requestedTtlSeconds)
    if (cache) RESPONSE_CACHE.set(prepared.request, cache)
    access?.requested(prepared.request.requestedModel)
    const recorder = createGenerationRecorder(runtime.ledger, service, generation, prepared.request)
    // The response cache answers a repeated request without the upstream (docs/decisions.md, Response cache).
    const running = answerEmbeddingsCached(service, repositories.responseCache, prepared, embeddingsBody, () => runEmbeddings(service, prepared))
    // The ledger writes the generation (or the failure) before the answer leaves.
    await recorder.run(running.then((answer) => ({ isStream: false as const, answer: answer.answer })))
    const answer: EmbeddingsAnswer = await running
    access?.whole(answer.answer)
    return withCacheHeaders(json(toEmbeddingsWire(chatCompletionId(answer.answer.result.id), answer, body.encoding_format)), prepared.request)
  },
})

const EMBEDDING_MODELS_PATH = '/embeddings/models'

/** The catalog's embedding models, in `GET /models`'s shape and paging. */
export const listEmbeddingModels = defineRoute({
  method: 'GET',
  path: EMBEDDING_MODELS_PATH,
  auth: 'none',
  query: EmbeddingModelsQuerySchema,
  async handle({ request, query, runtime }) {
    const listQuery = { offset: query.offset, ...(query.limit === undefined ? {} : { limit: query.limit }), output_modalities: ['embeddings'] } as ListModelsQuery
    // The catalog's own cache and ETag, as `GET /models` answers.
    return cachedJsonReply(request, await catalogAnswers(runtime.inference).list(listQuery, basePathOf(request, EMBEDDING_MODELS_PATH)), CATALOG_CACHE_CONTROL)
  },
})
