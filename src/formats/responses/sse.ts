/**
 * A session as Responses server-sent events (spec: Streaming): `response.created` and
 * `response.in_progress`, the item-level events numbered by `sequence_number`, one of
 * `response.completed|incomplete|failed`, then `[DONE]`; `: PROCESSING` comments keep a quiet
 * connection open. Events are written as text: the Node bridge hands strings to the socket as they
 * are, and a web stream encodes them.
 */

import type { ChunkProducer } from '../../core/event-stream'
import type { ResponseSession, SessionEvent } from '../../engine/session-events'
import { inProgressObject, resultObject } from './object'

const KEEP_ALIVE = ': PROCESSING\n\n'
const DONE = 'data: [DONE]\n\n'

// `sequence_number` goes last, spliced into the serialised event rather than copied into a new object. An event
// relayed as the upstream wrote it is not serialised again: its text is the JSON of its fields, handed over
// without its closing brace, since cutting that off a text joined from pieces would copy the whole text first.
const encodeEvent = (event: { type: string; wireJsonOpen?: string | undefined }, sequenceNumber: number) => {
  const open = event.wireJsonOpen ?? JSON.stringify(event).slice(0, -1)
  return `event: ${event.type}\ndata: ${open},"sequence_number":${sequenceNumber}}\n\n`
}

const FINAL_EVENT_TYPES = { completed: 'response.completed', incomplete: 'response.incomplete', failed: 'response.failed' } as const

export const toResponsesSse =
  (session: ResponseSession): ChunkProducer =>
  (sink) => {
    const { request } = session
    let sequence = 0
    const encode = (event: SessionEvent): string | undefined => {
      switch (event.type) {
        case 'keep_alive':
          return KEEP_ALIVE
        case 'started': {
          // The two start-up events carry the same response object: it is serialised once.
          const response = JSON.stringify(inProgressObject(request, event))
          return (
            `event: response.created\ndata: {"type":"response.created","response":${response},"sequence_number":${sequence++}}\n\n` +
            `event: response.in_progress\ndata: {"type":"response.in_progress","response":${response},"sequence_number":${sequence++}}\n\n`
          )
        }
        case 'debug': {
          const debug = { type: 'response.debug', debug: { upstream_body: event.upstreamBody, provider: event.provider } }
          return encodeEvent(debug, sequence++)
        }
        case 'relayed':
          return encodeEvent(event.event, sequence++)
        // The final response carries both.
        case 'usage':
        case 'error':
          return undefined
        case 'finished': {
          const final = { type: FINAL_EVENT_TYPES[event.result.status], response: resultObject(request, event.result) }
          return encodeEvent(final, sequence++) + DONE
        }
        default:
          return encodeEvent(event, sequence++)
      }
    }
    return session.start({
      write(event) {
        const chunk = encode(event)
        return chunk === undefined ? true : sink.write(chunk)
      },
      ready: () => sink.ready(),
      close: () => sink.close(),
      fail: (error) => sink.fail(error),
    })
  }
