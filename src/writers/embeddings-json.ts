/** The embeddings answer in OpenAI's shape, with OpenRouter's usage fields (cost, BYOK, cost details). */

import type { EmbeddingsAnswer } from '../engine/embeddings'
import { toChatCostDetails } from './chat-completions-shared'

/** OpenAI's `base64`: the vector's float32 values, little-endian, base64-encoded. */
export const toBase64Vector = (vector: readonly number[]): string => {
  const bytes = new Uint8Array(vector.length * 4)
  const view = new DataView(bytes.buffer)
  vector.forEach((value, index) => view.setFloat32(index * 4, value, true))
  let binary = ''
  // In slices: one String.fromCharCode call per whole vector would pass the engine's argument limit.
  for (let offset = 0; offset < bytes.length; offset += 0x8000) binary += String.fromCharCode(...bytes.subarray(offset, offset + 0x8000))
  return btoa(binary)
}

export const toEmbeddingsWire = (id: string, answer: EmbeddingsAnswer, encodingFormat: 'float' | 'base64') => {
  const { usage } = answer
  return {
    id,
    object: 'list',
    data: answer.embeddings.map((vector, index) => ({ object: 'embedding', index, embedding: encodingFormat === 'base64' ? toBase64Vector(vector) : vector })),
    model: answer.servedBy.model,
    usage: {
      prompt_tokens: usage.input_tokens,
      total_tokens: usage.total_tokens,
      cost: usage.cost,
      is_byok: usage.is_byok,
      ...(usage.is_cache_hit ? { is_cache_hit: true } : {}),
      cost_details: toChatCostDetails(usage.cost_details),
    },
  }
}
