/**
 * Gemini embeddings: `POST {baseURL}/models/{model}:batchEmbedContents`
 * (https://ai.google.dev/api/embeddings#method:-models.batchembedcontents), one `EmbedContentRequest` per
 * input text, vectors back in the same order. `dimensions` → `outputDimensionality`; `input_type` →
 * `taskType`, OpenRouter's `search_query` / `search_document` as Gemini's retrieval tasks and Gemini's own
 * task names as they are. Token id input is not taken (the endpoint's parameters never list it).
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../core/errors'
import type { EmbeddingsAdapter, EmbeddingsCall, UpstreamRequest, UpstreamTarget } from '../contract'
import { UpstreamFailure } from '../../core/upstream-failure'

const TASK_TYPES: Readonly<Record<string, string>> = {
  search_query: 'RETRIEVAL_QUERY',
  search_document: 'RETRIEVAL_DOCUMENT',
  retrieval_query: 'RETRIEVAL_QUERY',
  retrieval_document: 'RETRIEVAL_DOCUMENT',
  semantic_similarity: 'SEMANTIC_SIMILARITY',
  classification: 'CLASSIFICATION',
  clustering: 'CLUSTERING',
  question_answering: 'QUESTION_ANSWERING',
  fact_verification: 'FACT_VERIFICATION',
  code_retrieval_query: 'CODE_RETRIEVAL_QUERY',
}

const taskTypeOf = (inputType: string): string => {
  const taskType = TASK_TYPES[inputType.toLowerCase()]
  if (!taskType) throw new InvalidRequestError(`input_type: Gemini takes ${Object.keys(TASK_TYPES).join(', ')}`)
  return taskType
}

const BatchEmbedSchema = v.looseObject({
  embeddings: v.array(v.looseObject({ values: v.array(v.number()) })),
  usageMetadata: v.optional(v.looseObject({ promptTokenCount: v.optional(v.number()) })),
})

const modelPath = (model: string) => (model.includes('/') ? model : `models/${model}`)

export const buildGeminiEmbeddingsRequest = (call: EmbeddingsCall, target: UpstreamTarget): UpstreamRequest => {
  const base = target.baseURL.endsWith('/') ? target.baseURL.slice(0, -1) : target.baseURL
  const model = modelPath(call.upstreamModel)
  const taskType = call.inputType === undefined ? undefined : taskTypeOf(call.inputType)
  const requests = call.input.map((text) => {
    if (typeof text !== 'string') throw new InvalidRequestError('input: Gemini embeds text, not token ids')
    return {
      model,
      content: { parts: [{ text }] },
      ...(taskType ? { taskType } : {}),
      ...(call.dimensions === undefined ? {} : { outputDimensionality: call.dimensions }),
    }
  })
  return {
    url: `${base}/${model}:batchEmbedContents`,
    method: 'POST',
    headers: {
      ...target.headers,
      'content-type': 'application/json',
      // Never logged: the provider credential.
      'x-goog-api-key': target.apiKey,
    },
    body: JSON.stringify({ requests }),
  }
}

export const readGeminiEmbeddingsResult: EmbeddingsAdapter['readResult'] = (body, call) => {
  const parsed = v.safeParse(BatchEmbedSchema, body)
  if (!parsed.success || parsed.output.embeddings.length !== call.input.length) {
    throw new UpstreamFailure('provider_unavailable', 'The provider sent a malformed embeddings response', { upstreamStatus: 200 })
  }
  const tokens = parsed.output.usageMetadata?.promptTokenCount
  return { embeddings: parsed.output.embeddings.map((embedding) => embedding.values), ...(typeof tokens === 'number' ? { inputTokens: tokens } : {}) }
}

/** Gemini refuses more than 100 requests in one batch ("at most 100 requests can be in one batch"). */
const GEMINI_BATCH_MAX = 100

export const geminiEmbeddings: EmbeddingsAdapter = { maxInputsPerCall: GEMINI_BATCH_MAX, buildRequest: buildGeminiEmbeddingsRequest, readResult: readGeminiEmbeddingsResult }
