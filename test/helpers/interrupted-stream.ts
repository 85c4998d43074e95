/** For tests of streams that are ended while in flight: an upstream that stops mid-answer, and an incremental reader. */

import { fixture, type UpstreamReply } from './upstream'

/** An Anthropic stream that sends its first text delta, then goes silent for ever. */
export const hangsAfterFirstDelta = (): UpstreamReply => {
  const bytes = fixture('anthropic', 'text.sse')
  const text = bytes.toString('utf8')
  const cut = Buffer.byteLength(text.slice(0, text.indexOf('\n\n', text.indexOf('text_delta')) + 2))
  return {
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    chunks: [bytes.subarray(0, cut), bytes.subarray(cut)],
    pause: { after: 1, until: new Promise(() => {}) },
  }
}

/** Reads a body incrementally: `until` waits for text to appear, `rest` reads to the end and returns all of it. */
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
