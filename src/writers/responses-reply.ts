/** The HTTP answer of a Responses request: the one place a whole answer or a session becomes a `Reply` (src/core/reply.ts). */

import { eventsReply, json, responseReply, type Reply } from '../core/reply'
import { ClientClosedError } from '../engine/attempts'
import type { RunOutcome } from '../engine/run'
import type { ResponseSession, WholeAnswer } from '../engine/session-events'
import { resultObject } from './responses-object'
import { toResponsesSse } from './responses-sse'

/** The gateway's own time spent on a request, upstream waits excluded. */
export const OVERHEAD_HEADER = 'x-modelgate-overhead-ms'

export const replyWhole = (answer: WholeAnswer): Reply =>
  json(resultObject(answer.request, answer.result), 200, { [OVERHEAD_HEADER]: answer.overheadMs.toFixed(3) })

export const replyStream = (session: ResponseSession): Reply =>
  eventsReply(toResponsesSse(session), {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    [OVERHEAD_HEADER]: session.overheadMs.toFixed(3),
  })

/** The answer of a run; a client that went away gets a 499 nobody reads (nginx's "client closed request"), for logs. */
export const replyTo = async (
  running: Promise<RunOutcome | { isStream: false; reply: Response }>,
  observe: (session: ResponseSession) => ResponseSession = (session) => session,
): Promise<Reply> => {
  try {
    const outcome = await running
    if (outcome.isStream) return replyStream(observe(outcome.session))
    return 'reply' in outcome ? responseReply(outcome.reply) : replyWhole(outcome.answer)
  } catch (error) {
    if (error instanceof ClientClosedError) return responseReply(new Response(null, { status: 499 }))
    throw error
  }
}
