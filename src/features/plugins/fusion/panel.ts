/**
 * One analysis model's run: an ordinary streamed request through the engine (routing, fallbacks, BYOK, its own
 * spend reservation and server-tool loop), whose events are read here rather than sent to the client. Its text
 * and reasoning are passed on as they arrive, for the fusion stream's panel events.
 */

import { isGatewayError, type GatewayError } from '../../../core/errors'
import type { OutputItem, OutputMessage } from '../../../providers/types'
import type { BilledUsage } from '../../../engine/billing'
import type { ResponseSession, StoppedUsage } from '../../../engine/session-events'

export type PanelOutcome =
  | { isAnswered: true; model: string; content: string; usage: BilledUsage | null }
  /** `cause`: the error of a run that failed before it started, for a request whose every member did. */
  | { isAnswered: false; model: string; error: string; statusCode?: number; usage: BilledUsage | null; cause?: GatewayError }

export interface PanelHooks {
  onText(delta: string): void
  onReasoning(delta: string): void
}

/** The answer's text: every output text of its messages, in order. */
export const answerText = (output: readonly OutputItem[]): string =>
  output
    .filter((item): item is OutputMessage => item.type === 'message')
    .flatMap((message) => message.content.flatMap((part) => (part.type === 'output_text' ? [part.text] : [])))
    .join('\n\n')

const failedBefore = (model: string, failure: GatewayError): PanelOutcome => ({
  isAnswered: false,
  model,
  error: failure.status === 500 ? 'Internal server error' : failure.message,
  statusCode: failure.status,
  usage: null,
  cause: failure,
})

/** An opened panel run: `play` reads it to its end; `stop` ends it early (the client went away). */
export interface PanelRun {
  model: string
  play(hooks: PanelHooks): Promise<PanelOutcome>
  /** Stops the run if it is still going; what it used either way (nothing when it never answered). */
  stop(): StoppedUsage | undefined
}

/**
 * Opens one member's run. A member whose every endpoint failed is an outcome, not a throw; a spend limit (402), the
 * client going away or a bug ends the whole request.
 */
export const openPanelRun = async (model: string, open: () => Promise<ResponseSession>): Promise<PanelRun | PanelOutcome> => {
  let session: ResponseSession
  try {
    session = await open()
  } catch (error) {
    if (!isGatewayError(error) || error.status === 402) throw error
    return failedBefore(model, error)
  }
  let stopSession: (() => StoppedUsage | undefined) | undefined
  let isEnded = false
  // Set when the run ended, before `play` resolves: a stop in between still finds what it cost.
  let endedUsage: StoppedUsage | undefined
  return {
    model,
    play: (hooks) =>
      new Promise<PanelOutcome>((resolve) => {
        let outcome: PanelOutcome | undefined
        stopSession = session.start({
          write(event) {
            if (event.type === 'response.output_text.delta') hooks.onText(event.delta)
            else if (event.type === 'response.reasoning_text.delta' || event.type === 'response.reasoning_summary_text.delta') hooks.onReasoning(event.delta)
            else if (event.type === 'finished') {
              const { result } = event
              outcome =
                result.status === 'failed'
                  ? { isAnswered: false, model, error: result.error?.message ?? 'The model failed', ...(result.error ? { statusCode: result.error.status } : {}), usage: result.usage }
                  : { isAnswered: true, model, content: answerText(result.output), usage: result.usage }
            }
            return true
          },
          ready: () => Promise.resolve(),
          close: (stopped) => {
            isEnded = true
            // Cut short by the client: what the run used so far, as a stop would have said.
            endedUsage = outcome?.usage ? { usage: outcome.usage, isEstimated: false } : stopped
            resolve(outcome ?? { isAnswered: false, model, error: 'The run was stopped', usage: stopped?.usage ?? null })
          },
          fail: () => {
            isEnded = true
            resolve({ isAnswered: false, model, error: 'Internal server error', statusCode: 500, usage: null })
          },
        })
      }),
    stop: () => (isEnded ? endedUsage : stopSession?.()),
  }
}

export const isPanelRun = (value: PanelRun | PanelOutcome): value is PanelRun => 'play' in value
