/**
 * Incremental server-sent events parsing for upstream streams. Bytes are decoded once with a
 * streaming UTF-8 decoder (a multi-byte character split across chunks stays whole) and fed to
 * eventsource-parser, which handles every line-ending and chunk-boundary case of the SSE grammar.
 */

import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { formatByteSize } from '../../core/byte-size'
import { Utf8StreamDecoder } from '../../core/utf8-stream'
import { UpstreamFailure } from '../../core/upstream-failure'

/** The default bound of one event, when the caller gives none (`upstream.maxEventBytes`). */
export const DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024

export interface SseMessage {
  /** The `event:` field, when the upstream names its events (Anthropic, OpenAI Responses). */
  event?: string | undefined
  data: string
}

/** The failure of a stream whose event outgrew the bound before it ended. */
export const eventTooLarge = (maxEventBytes: number): UpstreamFailure =>
  new UpstreamFailure('provider_unavailable', `The provider sent an event larger than the gateway accepts (${formatByteSize(maxEventBytes)})`, {
    upstreamStatus: 200,
  })

/**
 * Yields each event of an SSE body as it arrives; never buffers more than one incomplete event, and fails once
 * about `maxEventBytes` have come without completing one (the parser holds all of them until it does). The count
 * restarts with each chunk that completes an event, so it is precise to one chunk.
 */
export async function* readSse(body: AsyncIterable<Uint8Array>, maxEventBytes = DEFAULT_MAX_EVENT_BYTES): AsyncIterable<SseMessage> {
  const decoder = new Utf8StreamDecoder()
  const ready: SseMessage[] = []
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => ready.push({ event: message.event, data: message.data }),
  })
  let pendingBytes = 0
  for await (const chunk of body) {
    pendingBytes += chunk.byteLength
    parser.feed(decoder.decode(chunk))
    if (ready.length > 0) pendingBytes = 0
    else if (pendingBytes > maxEventBytes) throw eventTooLarge(maxEventBytes)
    while (ready.length > 0) yield ready.shift()!
  }
  parser.feed(decoder.end())
  // A final event without its blank line still counts: some upstreams end the body right after `data:`.
  parser.feed('\n\n')
  while (ready.length > 0) yield ready.shift()!
}

/** Parses an SSE data payload as JSON, or returns `undefined` (for `[DONE]` and keep-alives). */
export const parseSseJson = (data: string): unknown => {
  if (data === '[DONE]' || data.trim() === '') return undefined
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}
