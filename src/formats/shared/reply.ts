/**
 * The HTTP answer of a run in any wire format: the one place a whole answer or a session becomes a
 * `Reply` (src/core/reply.ts). Each format supplies its two encoders.
 */

import type { ChunkProducer, ChunkSink } from '../../core/event-stream'
import { eventsReply, responseReply, type Reply } from '../../core/reply'
import { ClientClosedError } from '../../engine/attempts'
import type { RunOutcome } from '../../engine/run-stage'
import type { ResponseSession, SessionEvent, WholeAnswer } from '../../engine/session-events'

/** The gateway's own time spent on a request, upstream waits excluded. */
export const OVERHEAD_HEADER = 'x-modelgate-overhead-ms'

/** How one wire format answers: a whole answer as JSON, a session as server-sent events. */
export interface WireFormat {
  whole(answer: WholeAnswer): Reply
  stream(session: ResponseSession): Reply
}

/** A server-sent event reply, with the headers every streamed format sends. */
export const sseReply = (produce: ChunkProducer, overheadMs: number): Reply =>
  eventsReply(produce, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    [OVERHEAD_HEADER]: overheadMs.toFixed(3),
  })

/** Starts `session` into `sink`, each event as the text `encode` makes of it; events it has no text for are skipped. */
export const startEncoded = (session: ResponseSession, sink: ChunkSink, encode: (event: SessionEvent) => string | undefined) =>
  session.start({
    write(event) {
      const text = encode(event)
      return text === undefined || text === '' ? true : sink.write(text)
    },
    ready: () => sink.ready(),
    close: () => sink.close(),
    fail: (error) => sink.fail(error),
  })

/** The answer of a run; a client that went away gets a 499 nobody reads (nginx's "client closed request"), for logs. */
export const replyInFormat = async (
  format: WireFormat,
  running: Promise<RunOutcome | { isStream: false; reply: Response }>,
  observe: (session: ResponseSession) => ResponseSession = (session) => session,
): Promise<Reply> => {
  try {
    const outcome = await running
    if (outcome.isStream) return format.stream(observe(outcome.session))
    return 'reply' in outcome ? responseReply(outcome.reply) : format.whole(outcome.answer)
  } catch (error) {
    if (error instanceof ClientClosedError) return responseReply(new Response(null, { status: 499 }))
    throw error
  }
}
