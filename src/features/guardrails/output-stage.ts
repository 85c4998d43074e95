/**
 * The guardrails' output stage around a request's run (run-stage.ts): a whole answer has the governing guardrails'
 * content filters run over its output, redacted, flagged, or refused with 403 (after it was paid for: the model did
 * answer). Streamed output is not scanned (docs/decisions.md, Guardrails): its text reaches the client as it is written.
 */

import type { InferenceRequest } from '../../engine/request'
import type { RunStage } from '../../engine/run-stage'
import type { WholeAnswer } from '../../engine/session-events'
import { guardOutput, guardrailBlockError, withPaidUsage } from './enforce'
import { withGuardrailRefusal } from '../../engine/refusal'
import { GUARDRAILS, guardrailEventsOf, setGuardrailEvents } from './request-guardrails'

const guardAnswerOutput = async (request: InferenceRequest, answer: WholeAnswer): Promise<WholeAnswer> => {
  const guardrails = GUARDRAILS.get(request)
  if (!guardrails) return answer
  const guarded = await guardOutput(guardrails, answer.result.output)
  if (!guarded) return answer
  request.pipeline = [...(request.pipeline ?? []), ...guarded.stages]
  setGuardrailEvents(request, [...(guardrailEventsOf(request) ?? []), ...guarded.events])
  const metadata = answer.result.serviceMetadata
  const serviceMetadata = metadata ? { ...metadata, pipeline: [...((metadata.pipeline as unknown[] | undefined) ?? []), ...guarded.stages] } : undefined
  // The request holds the scan's events already: the refusal adds none.
  if (guarded.block) throw withGuardrailRefusal(withPaidUsage(guardrailBlockError(guarded.block, serviceMetadata), answer.result.usage), { events: [] })
  return { ...answer, result: { ...answer.result, output: guarded.content, ...(serviceMetadata ? { serviceMetadata } : {}) } }
}

export const guardrailOutputStage: RunStage = {
  name: 'guardrails-output',
  async run(request, next) {
    const outcome = await next(request)
    return outcome.isStream ? outcome : { isStream: false, answer: await guardAnswerOutput(request, outcome.answer) }
  },
}
