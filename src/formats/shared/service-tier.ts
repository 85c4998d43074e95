/**
 * The `service_tier` an answer echoes, in OpenAI's names (Responses and Chat Completions): the tier the upstream said
 * served it; when it said none (Gemini, most OpenAI-compatible hosts), the tier asked for, as the gateway sent it
 * (docs/decisions.md, "Service tier").
 */

import type { ResponseResult } from '../../engine/session-events'

/** spec service_tier: `fast` is an alias of `priority`; nothing asked is `auto`. */
const askedTier = (asked: string | null | undefined): string => (asked === 'fast' ? 'priority' : (asked ?? 'auto'))

/** The tier `result` was served on, else the one asked for; `result` is null while the answer is in progress. */
export const echoedServiceTier = (result: Pick<ResponseResult, 'serviceTier'> | null, asked: string | null | undefined): string => result?.serviceTier ?? askedTier(asked)
