/** The response cache's settings on the inference service (src/features/settings.ts), from the gateway's options. */

import type { ResponseCacheCaps } from '../../repositories/response-cache'

/** What the operator sets (`createGateway({ responseCache })`): the caps, and what a hit is charged in USD. */
export interface ResponseCacheSettings extends ResponseCacheCaps {
  hitCharge: number
}

const MIB = 1_048_576

/** The operator's options with their defaults. */
export const createResponseCacheSettings = (options: Partial<ResponseCacheSettings> | undefined): ResponseCacheSettings => ({
  maxEntryBytes: options?.maxEntryBytes ?? MIB,
  maxWorkspaceBytes: options?.maxWorkspaceBytes ?? 64 * MIB,
  maxWorkspaceEntries: options?.maxWorkspaceEntries ?? 1_000,
  hitCharge: options?.hitCharge ?? 0,
})
