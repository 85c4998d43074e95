/**
 * The semantic cache (docs/decisions.md, Response cache): a request of a workspace that opted in, which found no exact
 * entry, has its prompt embedded by the operator's model and compared with the prompts of the workspace's most recent
 * answers of the same shape; the most similar at or above the threshold answers it. Bounded: `compareLast` vectors,
 * one dot product each, compared by `settings.findNearest` (nearest.ts): on a worker thread, where the gateway has
 * them, so the event loop only reads the candidates and packs them.
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
  const candidates = await entries.recentVectors(request.spend.workspace.id, shape, settings.compareLast)
  const nearest = candidates.length === 0 ? undefined : await settings.findNearest(vector, candidates.map((candidate) => candidate.vector), settings.threshold)
  const best = nearest && { entryId: candidates[nearest.index]!.entryId, similarity: nearest.similarity }
  const entry = best ? await entries.get(best.entryId, service.now()) : null
  return entry && best ? { shape, vector, match: { entry, similarity: best.similarity } } : { shape, vector }
}
