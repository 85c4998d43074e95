/** For tests of streams that are ended while in flight: an upstream that stops mid-answer, and an incremental reader. */

import { fixture, type UpstreamReply } from './upstream'

/** Recorded streams (test/fixtures/providers/<provider>/text.sse) and what marks a text delta in each. */
const TEXT_DELTA = {
  anthropic: 'text_delta',
  openai: '"type":"response.output_text.delta"',
  'openai-chat': '"delta":{"content":',
} as const

export type StreamProvider = keyof typeof TEXT_DELTA

/** The provider's recorded text stream, split after the event holding its `deltas`-th text delta. */
const splitAfterDeltas = (provider: StreamProvider, deltas: number) => {
  const bytes = fixture(provider, 'text.sse')
  const text = bytes.toString('utf8')
  let at = -1
  for (let delta = 0; delta < deltas; delta++) {
    at = text.indexOf(TEXT_DELTA[provider], at + 1)
    if (at < 0) throw new Error(`the ${provider} stream has fewer than ${deltas} text deltas`)
  }
  const cut = Buffer.byteLength(text.slice(0, text.indexOf('\n\n', at) + 2))
  return [bytes.subarray(0, cut), bytes.subarray(cut)] as const
}

const SSE_HEADERS = { 'content-type': 'text/event-stream' }

/** A stream (Anthropic's unless told) that sends its first text delta, then goes silent for ever. */
export const hangsAfterFirstDelta = (provider: StreamProvider = 'anthropic'): UpstreamReply => ({
  status: 200,
  headers: SSE_HEADERS,
  chunks: [...splitAfterDeltas(provider, 1)],
  pause: { after: 1, until: new Promise(() => {}) },
})

/** A stream that sends its first `deltas` text deltas and then drops the connection, with no usage said. */
export const breaksAfterDeltas = (provider: StreamProvider, deltas: number): UpstreamReply => ({
  status: 200,
  headers: SSE_HEADERS,
  chunks: [splitAfterDeltas(provider, deltas)[0]],
  shouldDestroyAfter: true,
})

/**
 * Reads a body incrementally: `until` waits for text to appear, `seen` is what was read so far, `rest` reads to the
 * end and returns all of it.
 */
export const bodyReader = (body: ReadableStream<Uint8Array>) => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const more = async () => {
    const { done, value } = await reader.read()
    if (!done) text += decoder.decode(value, { stream: true })
    return !done
  }
  return {
    async until(fragment: string) {
      while (!text.includes(fragment)) if (!(await more())) throw new Error(`the stream ended without ${fragment}:\n${text}`)
    },
    seen: () => text,
    async rest() {
      while (await more()) {}
      return text
    },
  }
}

/** The `data:` payloads of an SSE text, parsed (`'[DONE]'` as is); comments are skipped. */
export const sseEventsOf = (text: string): any[] =>
  text
    .split('\n\n')
    .filter((block) => block.trim() && !block.startsWith(':'))
    .map((block) => {
      const data = block.split('\n').find((line) => line.startsWith('data: '))!.slice(6)
      return data === '[DONE]' ? '[DONE]' : JSON.parse(data)
    })
