/** The HTTP answer of a Responses request: a whole answer as the Response object, a session as Responses events. */

import { json, type Reply } from '../../core/reply'
import type { RunOutcome } from '../../engine/run-stage'
import type { ResponseSession, WholeAnswer } from '../../engine/session-events'
import { OVERHEAD_HEADER, replyInFormat, sseReply, type WireFormat } from '../shared/reply'
import { resultObject } from './object'
import { toResponsesSse } from './sse'


export const replyWhole = (answer: WholeAnswer): Reply =>
  json(resultObject(answer.request, answer.result), 200, { [OVERHEAD_HEADER]: answer.overheadMs.toFixed(3) })

export const replyStream = (session: ResponseSession): Reply => sseReply(toResponsesSse(session), session.overheadMs)

export const RESPONSES_FORMAT: WireFormat = { whole: replyWhole, stream: replyStream }

/** The answer of a run in the Responses format; a client that went away gets a 499 nobody reads. */
export const replyTo = (
  running: Promise<RunOutcome | { isStream: false; reply: Response }>,
  observe?: (session: ResponseSession) => ResponseSession,
): Promise<Reply> => replyInFormat(RESPONSES_FORMAT, running, observe)
