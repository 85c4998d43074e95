/** The response cache's settings on the inference service (src/features/settings.ts), from the gateway's options. */

import type { ResponseCacheCaps } from '../../repositories/response-cache'
import { inProcessNearest, type NearestVectorFinder } from './nearest'

/** What the operator sets (`createGateway({ responseCache })`): the caps, and what a hit is charged in USD. */
export interface ResponseCacheSettings extends ResponseCacheCaps {
  hitCharge: number
  /** The semantic cache, when the operator names its embedding model; workspaces opt in (`cache.semantic`). */
  semantic?: SemanticCacheSettings
}

export interface SemanticCacheSettings {
  /** The embedding model, run on the operator's keys through the gateway's embeddings path. */
  model: string
  /** The cosine similarity from which a cached answer serves a request (default 0.95). */
  threshold: number
  /** How many of a workspace's most recent answers of the same shape a request is compared with (default 100). */
  compareLast: number
  /** Compares a prompt's embedding with the candidates': the gateway's worker threads, else the calling thread. */
  findNearest: NearestVectorFinder
}

type ResponseCacheOptions = Partial<Omit<ResponseCacheSettings, 'semantic'>> & {
  semantic?: { model: string; threshold?: number | undefined; compareLast?: number | undefined } | undefined
  /** Where the semantic comparison runs (the composition root passes its worker pool); in-process when absent. */
  findNearest?: NearestVectorFinder | undefined
}

const MIB = 1_048_576

/** The operator's options with their defaults. */
export const createResponseCacheSettings = (options: ResponseCacheOptions | undefined): ResponseCacheSettings => ({
  maxEntryBytes: options?.maxEntryBytes ?? MIB,
  maxWorkspaceBytes: options?.maxWorkspaceBytes ?? 64 * MIB,
  maxWorkspaceEntries: options?.maxWorkspaceEntries ?? 1_000,
  hitCharge: options?.hitCharge ?? 0,
  ...(options?.semantic
    ? {
        semantic: {
          model: options.semantic.model,
          threshold: options.semantic.threshold ?? 0.95,
          compareLast: options.semantic.compareLast ?? 100,
          findNearest: options.findNearest ?? inProcessNearest,
        },
      }
    : {}),
})
