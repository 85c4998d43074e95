/**
 * The semantic cache (docs/decisions.md, Response cache): a request of a workspace that opted in, which found no exact
 * entry, has its prompt embedded by the operator's model and compared with the prompts of the workspace's most recent
 * answers of the same shape; the most similar at or above the threshold answers it. Bounded: `compareLast` vectors,
 * one dot product each, so the comparison costs well under a millisecond for the default hundred.
 */

import { embedForGateway } from '../../engine/embeddings'
import type { InferenceRequest } from '../../engine/request'
import type { InferenceService } from '../../engine/service'
import type { ResponseCacheRecord, ResponseCacheRepository } from '../../repositories/response-cache'
import { semanticShapeKey } from './key'
import type { SemanticCacheSettings } from './settings'

/** What the semantic cache found, and what a miss stores beside its entry. */
export interface SemanticLookup {
  shape: string
  vector: number[]
  match?: { entry: ResponseCacheRecord; similarity: number }
}

const textOfContent = (content: unknown): string[] => {
  if (typeof content === 'string') return [content]
  if (!Array.isArray(content)) return []
  return content.flatMap((part: { type?: unknown; text?: unknown }) => (part.type === 'input_text' && typeof part.text === 'string' ? [part.text] : []))
}

/** The text a request asks with: its instructions and its messages' text, in order; empty when it has none. */
export const promptTextOf = (request: InferenceRequest): string => {
  const { instructions, input } = request.body
  const texts: string[] = typeof instructions === 'string' ? [instructions] : []
  if (typeof input === 'string') texts.push(input)
  else for (const item of input ?? []) if (!item.type || item.type === 'message') texts.push(...textOfContent((item as { content?: unknown }).content))
  return texts.join('\n')
}

const cosine = (left: readonly number[], right: readonly number[]): number => {
  let dot = 0
  let leftNorm = 0
  let rightNorm = 0
  for (let index = 0; index < left.length; index++) {
    dot += left[index]! * right[index]!
    leftNorm += left[index]! * left[index]!
    rightNorm += right[index]! * right[index]!
  }
  return leftNorm === 0 || rightNorm === 0 ? 0 : dot / Math.sqrt(leftNorm * rightNorm)
}

/** Embeds the request's prompt and finds its closest fresh neighbour; `undefined` when it has no text to compare. */
export const lookUpSemantic = async (
  service: InferenceService,
  entries: ResponseCacheRepository,
  request: InferenceRequest,
  settings: SemanticCacheSettings,
): Promise<SemanticLookup | undefined> => {
  const text = promptTextOf(request)
  if (text === '') return undefined
  const [shape, [vector]] = await Promise.all([semanticShapeKey(request), embedForGateway(service, request, settings.model, [text])])
  if (!vector) return undefined
  let best: { entryId: string; similarity: number } | undefined
  for (const candidate of await entries.recentVectors(request.spend.workspace.id, shape, settings.compareLast)) {
    if (candidate.vector.length !== vector.length) continue
    const similarity = cosine(vector, candidate.vector)
    if (similarity >= settings.threshold && (!best || similarity > best.similarity)) best = { entryId: candidate.entryId, similarity }
  }
  const entry = best ? await entries.get(best.entryId, service.now()) : null
  return entry && best ? { shape, vector, match: { entry, similarity: best.similarity } } : { shape, vector }
}
