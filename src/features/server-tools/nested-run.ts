/**
 * Runs the nested model calls of a request's server tools (nesting.ts): each a request of its own to the engine,
 * made for the same caller, key and end user, and left out of the parent's attempt reports (one generation record
 * per client response, whose cost includes the nested calls). Each holds its worst case on the request's spend
 * limits before it is sent (402 when one would be passed) and gives the hold back when it ends: the response's usage
 * includes what it cost, so the parent's settlement counts it with the rest.
 */

import type { InferenceRequest } from '../../engine/request'
import type { InferenceService } from '../../engine/service'
import { reserveSpend } from '../../engine/spend'
import type { WholeAnswer } from '../../engine/session-events'
import { answerWhole } from '../../engine/whole'
import { deeper, type NestedRunner } from './nesting'
import { planServerTools, type ServerToolPlan } from './plan'
import { SERVER_TOOLS } from './request-server-tools'

/** The server-tool loop, given by its caller: it is the module that uses this one. */
export type LoopAnswer = (service: InferenceService, request: InferenceRequest, plan: ServerToolPlan) => Promise<WholeAnswer>

export const createNestedRunner =
  (service: InferenceService, parent: InferenceRequest, plan: ServerToolPlan, answerLoop: LoopAnswer): NestedRunner =>
  async (call, signal) => {
    // Checked when the parent was planned, so this cannot refuse what the caller sent.
    const serverTools = planServerTools(service, call.body, plan.nesting.disabled, deeper(plan.nesting))
    const request: InferenceRequest = {
      body: call.body,
      attempts: call.attempts,
      requestedModel: call.body.model ?? parent.requestedModel,
      endUserId: parent.endUserId,
      requestId: parent.requestId,
      signal,
      // A nested call is part of the request: it waits only for what is left of the request's deadline.
      deadline: parent.deadline,
      isMetadataRequested: false,
      spend: parent.spend,
      attemptReports: [],
      pipeline: [],
    }
    if (serverTools) SERVER_TOOLS.set(request, serverTools)
    const hold = await reserveSpend(service, request)
    try {
      const answer = serverTools ? await answerLoop(service, request, serverTools) : await answerWhole(service, request)
      return answer.result
    } finally {
      hold.settle(null)
    }
  }
