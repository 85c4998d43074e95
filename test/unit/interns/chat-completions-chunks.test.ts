/** The re-encoding of an intern turn's Responses events as OpenRouter's intern chat chunks. */

import { describe, expect, it } from 'vitest'
import { toInternChatChunks } from '../../../src/interns/chat-completions'

const NOW = () => new Date('2026-11-23T12:00:00Z')
const event = (data: Record<string, unknown>) => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`

/** Runs `blocks` through the encoder, one network chunk per 7 bytes, and reads the chunks back. */
const encode = async (blocks: string[]) => {
  const bytes = new TextEncoder().encode(blocks.join(''))
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let offset = 0; offset < bytes.length; offset += 7) controller.enqueue(bytes.subarray(offset, offset + 7))
      controller.close()
    },
  })
  const text = await new Response(toInternChatChunks(body, 'session-1', NOW)).text()
  return text.split('\n\n').filter(Boolean)
}

const dataOf = (lines: string[]) => lines.filter((line) => line.startsWith('data: {')).map((line) => JSON.parse(line.slice(6)))

describe('toInternChatChunks', () => {
  it('passes keep-alive comments, reasoning and text deltas, then stop with usage and [DONE]', async () => {
    const lines = await encode([
      event({ type: 'response.created', response: { model: 'openai/gpt-4.1-mini' } }),
      ': PROCESSING\n\n',
      event({ type: 'response.reasoning_summary_text.delta', delta: 'Thinking' }),
      event({ type: 'response.output_text.delta', delta: 'Paris' }),
      event({ type: 'response.completed', response: { model: 'openai/gpt-4.1-mini', usage: { input_tokens: 9, output_tokens: 2, total_tokens: 11, cost: 0.001, input_tokens_details: { cached_tokens: 4 } } } }),
    ])
    expect(lines[0]).toBe(': PROCESSING')
    expect(lines.at(-1)).toBe('data: [DONE]')
    const chunks = dataOf(lines)
    expect(chunks.map((chunk) => chunk.choices[0]?.delta ?? null)).toEqual([{ role: 'assistant', reasoning: 'Thinking' }, { content: 'Paris' }, {}, null])
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop')
    expect(chunks.at(-1)).toEqual({
      id: chunks[0].id,
      object: 'chat.completion.chunk',
      created: 1_795_435_200,
      model: 'openai/gpt-4.1-mini',
      choices: [],
      session_id: 'session-1',
      usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cost: 0.001, prompt_tokens_details: { cached_tokens: 4 } },
    })
  })

  it('ends a failed turn with an error chunk, and a cut stream with stream_severed', async () => {
    const failed = dataOf(await encode([event({ type: 'response.output_text.delta', delta: 'Par' }), event({ type: 'response.failed', response: { error: { message: 'Upstream went away' } } })]))
    expect(failed.at(-2)).toMatchObject({ choices: [{ finish_reason: 'error' }], error: { code: 502, message: 'Upstream went away', metadata: { reason: 'turn_failed', retryable: true } } })
    expect(failed.at(-1)).toMatchObject({ choices: [], session_id: 'session-1', usage: null })
    const cut = dataOf(await encode([event({ type: 'response.output_text.delta', delta: 'Par' })]))
    expect(cut.at(-2)).toMatchObject({ model: 'modelgate/intern', error: { metadata: { reason: 'stream_severed' } } })
  })
})
