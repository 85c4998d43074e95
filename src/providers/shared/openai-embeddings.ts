/**
 * OpenAI's embeddings wire (`POST {baseURL}/embeddings`, https://platform.openai.com/docs/api-reference/embeddings),
 * which OpenAI and the compatible family (Mistral, Together, vLLM, …) serve alike. Vectors are always asked for
 * as floats: the gateway encodes `base64` itself, so every provider answers every `encoding_format`.
 */

import * as v from 'valibot'
import type { EmbeddingsAdapter, EmbeddingsCall, UpstreamRequest, UpstreamTarget } from '../contract'
import { UpstreamFailure } from '../../core/upstream-failure'

// Loose: a new upstream field never breaks us.
const EmbeddingsBodySchema = v.looseObject({
  id: v.optional(v.string()),
  data: v.array(v.looseObject({ embedding: v.array(v.number()), index: v.optional(v.number()) })),
  usage: v.optional(v.nullable(v.looseObject({ prompt_tokens: v.optional(v.number()) }))),
})

const malformed = (detail: string) => new UpstreamFailure('provider_unavailable', `The provider sent a malformed embeddings response: ${detail}`, { upstreamStatus: 200 })

/** Body fields configuration says never to send (`omitFields`, e.g. Mistral refuses `user`). */
const omittedFields = (target: UpstreamTarget): ReadonlySet<string> =>
  new Set((target.options?.omitFields ?? '').split(',').map((field) => field.trim()).filter(Boolean))

export const buildOpenAIEmbeddingsRequest = (call: EmbeddingsCall, target: UpstreamTarget): UpstreamRequest => {
  const omitted = omittedFields(target)
  const body: Record<string, unknown> = { model: call.upstreamModel, input: call.input, encoding_format: 'float' }
  if (call.dimensions !== undefined) body.dimensions = call.dimensions
  if (call.endUserId !== undefined && !omitted.has('user')) body.user = call.endUserId
  return {
    url: `${target.baseURL}/embeddings`,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      // Never logged: the provider credential. Self-hosted servers may run keyless.
      ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      ...target.headers,
    },
    body: JSON.stringify(body),
  }
}

export const readOpenAIEmbeddingsResult: EmbeddingsAdapter['readResult'] = (body, call) => {
  const parsed = v.safeParse(EmbeddingsBodySchema, body)
  if (!parsed.success) throw malformed('no data array of float vectors')
  const { data, usage, id } = parsed.output
  if (data.length !== call.input.length) throw malformed(`${data.length} vectors for ${call.input.length} inputs`)
  // `index` says which input each vector is for; without it the order is the input's.
  const embeddings: number[][] = new Array(call.input.length)
  data.forEach((item, position) => {
    const index = item.index ?? position
    if (!Number.isInteger(index) || index < 0 || index >= call.input.length || embeddings[index]) throw malformed(`an unexpected index ${index}`)
    embeddings[index] = item.embedding
  })
  return {
    embeddings,
    ...(typeof usage?.prompt_tokens === 'number' ? { inputTokens: usage.prompt_tokens } : {}),
    ...(id === undefined ? {} : { upstreamId: id }),
  }
}

export const openAIEmbeddings: EmbeddingsAdapter = { buildRequest: buildOpenAIEmbeddingsRequest, readResult: readOpenAIEmbeddingsResult }
