/**
 * The scripted provider's own wire format, between its in-process transport and its adapter. It is plain
 * data (functions and promises stay in the transport), so the answer crosses the same seam a real upstream's
 * bytes do: a JSON array for a whole answer, one server-sent event per step for a streamed one.
 */

import type { ErrorType } from '../core/upstream-failure'
import type { Usage } from '../providers/types'

/** One step of an answer as the adapter reads it: a single delta, never a list of chunks. */
export type WireStep =
  | { type: 'text'; delta: string }
  | { type: 'refusal'; delta: string }
  | { type: 'reasoning_summary'; delta: string }
  | { type: 'reasoning_text'; delta: string }
  /** Each reasoning step of a script is its own item; this closes the one before. */
  | { type: 'reasoning_end' }
  | { type: 'function_call'; key: number; name: string; callId?: string }
  | { type: 'function_call_arguments'; key: number; delta: string }
  | { type: 'usage'; usage: Usage }
  | { type: 'finish'; status: 'completed' | 'incomplete'; reason?: string }
  | { type: 'error'; errorType: ErrorType; message: string }

/** The error body of an HTTP failure; `type` is the canonical error type when the script named one. */
export interface WireErrorBody {
  error: { message: string; type?: ErrorType }
}

/** What the adapter sends: everything the script may look at, as JSON. */
export interface WireRequest {
  model: string
  stream: boolean
  request: Record<string, unknown>
  endUserId?: string
}

export const SCRIPTED_URL_SCHEME = 'modelgate-scripted:'

/** The base URL of a scripted provider: the kit's transport answers it in-process. */
export const scriptedBaseURL = (providerId: string) => `${SCRIPTED_URL_SCHEME}//${providerId}`

export const encodeStreamStep = (step: WireStep) => `data: ${JSON.stringify(step)}\n\n`
