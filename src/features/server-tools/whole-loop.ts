/**
 * A whole (non-streaming) answer with server tools: whole turns, each through the ordinary engine, with
 * the server calls of each run in between, then one result holding every turn's items and usage.
 */

import { isGatewayError, type GatewayError } from '../../core/errors'
import type { OutputItem } from '../../providers/types'
import { ClientClosedError } from '../../engine/attempts'
import { toResponseFailure } from '../../engine/fallback'
import type { InferenceRequest } from '../../engine/request'
import { requestAbortSignal } from '../../engine/request-deadline'
import type { InferenceService } from '../../engine/service'
import type { ResponseResult, WholeAnswer } from '../../engine/session-events'
import { answerWhole } from '../../engine/whole'
import { withCitations } from './citations'
import { ServerToolLoop, type PendingCall } from './loop'
import { createNestedRunner } from './nested-run'
import type { NestedRunner } from './nesting'
import type { ServerToolPlan } from './plan'

/** How the tools of `request` run their nested model calls (advisor, subagent): whole, with a loop of their own when they have server tools. */
export const nestedRunnerFor = (service: InferenceService, request: InferenceRequest, plan: ServerToolPlan): NestedRunner =>
  createNestedRunner(service, request, plan, answerWithServerTools)

/** Resolves with the result; rejects with the client's error when the first turn fails as a single turn would. */
export const answerWithServerTools = async (service: InferenceService, request: InferenceRequest, plan: ServerToolPlan): Promise<WholeAnswer> => {
  const loop = new ServerToolLoop(service, request, plan, nestedRunnerFor(service, request, plan))
  const tools = requestAbortSignal(request.signal, request.deadline)
  // Turns after the first are held before they are sent, each with what the loop spent so far (spend.ts).
  const { steps } = loop
  const output: OutputItem[] = []
  let first: ResponseResult | undefined
  let last!: ResponseResult
  let overheadMs = 0
  // A later turn failed: the response fails with what the earlier turns produced and cost, as a stream would.
  const failed = (error: GatewayError): WholeAnswer => ({
    request: request.body,
    result: { ...last, id: first!.id, createdAt: first!.createdAt, status: 'failed', output, usage: loop.usage(), error: toResponseFailure(error), incompleteDetails: null },
    overheadMs,
  })
  try {
    for (;;) {
      let answer: WholeAnswer
      try {
        const turn = loop.turnRequest()
        if (first) await steps.before(turn, loop.spentAfterFirstTurn())
        answer = await answerWhole(service, turn)
      } catch (error) {
        if (!first || error instanceof ClientClosedError || !isGatewayError(error)) throw error
        return failed(error)
      }
      overheadMs += answer.overheadMs
      first ??= answer.result
      last = answer.result
      const { result } = answer
      const decision = loop.afterTurn({ output: result.output, status: result.status, incompleteDetails: result.incompleteDetails, usage: result.usage })
      // Cited: the pages found before this turn, which is what its text could name (the same rule as a stream's).
      const citable = [...loop.sources]
      let ran: Map<PendingCall, OutputItem[]>
      try {
        ran = decision.calls.length > 0 ? await loop.runCalls(decision.calls, tools.signal) : new Map()
      } catch (error) {
        // The deadline stopped the tools: the response fails as a turn cut by it would.
        if (request.signal.aborted || !request.deadline.isPassed) throw error
        return failed(request.deadline.error())
      }
      if (request.signal.aborted) throw new ClientClosedError()
      output.push(...withCitations(loop.clientItems(result.output, ran), citable))
      if (decision.next === 'end') break
    }
  } catch (error) {
    if (request.signal.aborted) throw new ClientClosedError()
    throw error
  } finally {
    tools.release()
    steps.end()
  }
  return { request: request.body, result: { ...last, id: first.id, createdAt: first.createdAt, output, usage: loop.usage() }, overheadMs }
}
