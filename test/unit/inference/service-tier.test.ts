/**
 * `service_tier` in answers is the tier the upstream says served them, whole and streamed, on every inbound format,
 * from OpenAI Responses, Chat Completions (an OpenAI-compatible host) and Anthropic upstreams replaying recorded
 * fixtures whose tier is set to `priority`; where the upstream names none, the tier asked for is echoed.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { fixture, type UpstreamReply } from '../../helpers/upstream'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

/** Each upstream family: its fixture folder, the tier word its fixtures use, and a built-in model it serves. */
const FAMILIES = [
  { provider: 'openai', folder: 'openai', recorded: 'default', model: 'openai/gpt-4.1-mini' },
  { provider: 'groq', folder: 'openai-chat', recorded: 'default', model: 'openai/gpt-oss-120b' },
  { provider: 'anthropic', folder: 'anthropic', recorded: 'standard', model: 'anthropic/claude-sonnet-4.5' },
] as const

type Family = (typeof FAMILIES)[number]

/** The family's text fixture as served on the priority tier (Anthropic's word is the same). */
const onPriority = (family: Family, isStream: boolean): UpstreamReply => {
  const text = fixture(family.folder, isStream ? 'text.sse' : 'text.json')
    .toString('utf8')
    .replace(new RegExp(`"service_tier": ?"${family.recorded}"`, 'g'), '"service_tier":"priority"')
  return isStream
    ? { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: [text.slice(0, 200), text.slice(200)] }
    : { status: 200, headers: { 'content-type': 'application/json' }, body: text }
}

const start = async () => {
  harness = await createResponsesHarness({ openai: {}, groq: {}, anthropic: {} })
  for (const family of FAMILIES) harness.upstreams[family.provider]!.setHandler((request) => onPriority(family, request.json?.stream === true))
  return harness
}

const call = (path: string, body: Record<string, unknown>) =>
  harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )

const events = async (response: Response) => {
  expect(response.status).toBe(200)
  return (await readSseEvents(response)).events.map((event) => event.data)
}

describe('service_tier echoes the tier that served', () => {
  for (const family of FAMILIES) {
    it(`on /responses, whole and streamed, from ${family.folder}`, async () => {
      await start()
      const whole = await harness!.post({ model: family.model, input: 'hi' })
      expect((await whole.json()).service_tier).toBe('priority')
      const streamed = await events(await harness!.post({ model: family.model, input: 'hi', stream: true }))
      // In progress, only the tier asked for is known; the final response carries the one that served.
      expect(streamed.find((event) => event.type === 'response.created').response.service_tier).toBe('auto')
      expect(streamed.find((event) => event.type === 'response.completed').response.service_tier).toBe('priority')
    })

    it(`on /chat/completions, whole and streamed, from ${family.folder}`, async () => {
      await start()
      const messages = [{ role: 'user', content: 'hi' }]
      const whole = await call('/chat/completions', { model: family.model, messages })
      expect((await whole.json()).service_tier).toBe('priority')
      const chunks = (await events(await call('/chat/completions', { model: family.model, messages, stream: true, stream_options: { include_usage: true } }))).filter(
        (chunk) => chunk !== '[DONE]',
      )
      // The finish chunk and the usage chunk, once the upstream has said.
      expect(chunks.filter((chunk) => 'service_tier' in chunk).map((chunk) => chunk.service_tier)).toEqual(['priority', 'priority'])
      expect(chunks.at(-1).usage).toBeDefined()
    })

    it(`on /messages, whole and streamed, from ${family.folder}`, async () => {
      await start()
      const body = { model: family.model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }
      const whole = await call('/messages', body)
      expect((await whole.json()).usage.service_tier).toBe('priority')
      const streamed = await events(await call('/messages', { ...body, stream: true }))
      expect(streamed.find((event) => event.type === 'message_start').message.usage.service_tier).toBeNull()
      expect(streamed.find((event) => event.type === 'message_delta').usage.service_tier).toBe('priority')
    })
  }

  it('echoes the tier asked for when the upstream names none', async () => {
    await start()
    // The Chat Completions host answers with its own word for a tier, which OpenAI's clients would not know.
    harness!.upstreams.groq!.setHandler(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fixture('openai-chat', 'text.json').toString('utf8').replace(/"service_tier": ?"default"/, '"service_tier":"on_demand"'),
    }))
    const messages = [{ role: 'user', content: 'hi' }]
    expect((await (await call('/chat/completions', { model: 'openai/gpt-oss-120b', messages, service_tier: 'default' })).json()).service_tier).toBe('default')
    expect((await (await harness!.post({ model: 'openai/gpt-oss-120b', input: 'hi' })).json()).service_tier).toBe('auto')
    const message = await call('/messages', { model: 'openai/gpt-oss-120b', max_tokens: 64, messages, service_tier: 'standard_only' })
    expect((await message.json()).usage.service_tier).toBe('standard')
  })
})
