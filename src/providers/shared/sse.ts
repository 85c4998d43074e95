/**
 * Incremental server-sent events parsing for upstream streams. Bytes are decoded once with a
 * streaming UTF-8 decoder (a multi-byte character split across chunks stays whole) and fed to
 * eventsource-parser, which handles every line-ending and chunk-boundary case of the SSE grammar.
 */

import { createParser, type EventSourceMessage } from 'eventsource-parser'

export interface SseMessage {
  /** The `event:` field, when the upstream names its events (Anthropic, OpenAI Responses). */
  event: string | undefined
  data: string
}

/** Yields each event of an SSE body as it arrives; never buffers more than one incomplete event. */
export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncIterable<SseMessage> {
  const decoder = new TextDecoder('utf-8')
  const ready: SseMessage[] = []
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => ready.push({ event: message.event, data: message.data }),
  })
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }))
    while (ready.length > 0) yield ready.shift()!
  }
  parser.feed(decoder.decode())
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
