/**
 * A new user's first answer: the runner in development mode (`modelgate serve --dev`, what `npm start` runs), no
 * provider key anywhere, the management key it prints on first start, a regular key made with it, and the official
 * `openai` SDK asking the demo models, whole and streamed, with a tool round trip.
 */

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import OpenAI from 'openai'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { startListening, type RunningProcess } from '../helpers/process'

const CLI = resolve(__dirname, '../../dist/cli.js')

// No provider key may reach the runner from the machine's environment: the demo models must answer without one.
const WITHOUT_PROVIDER_KEYS = Object.fromEntries(
  Object.keys(process.env)
    .filter((name) => /_API_KEY$|^MODELGATE_PROVIDER_/.test(name))
    .map((name) => [name, '']),
)

describe('demo models through the openai SDK against modelgate serve --dev', () => {
  let dataDir: string
  const running: RunningProcess[] = []

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'modelgate-demo-'))
  })
  afterEach(async () => {
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')))
    await rm(dataDir, { recursive: true, force: true })
  })

  const serve = async (args: string[], env: Record<string, string> = {}) => {
    const server = await startListening('node', [CLI, 'serve', ...args], {
      env: { ...WITHOUT_PROVIDER_KEYS, MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_LOG_LEVEL: 'warn', ...env },
    })
    running.push(server)
    return server
  }

  /** The first start's management key (printed once on stdout), turned into a regular key as the printout says. */
  const regularKeyOf = async (server: RunningProcess) => {
    // Printed just after the listening line, which may reach the pipe on its own.
    const managementKey = await vi.waitFor(() => {
      const found = /mg-v1-[A-Za-z0-9_-]+/.exec(server.stdout())?.[0]
      if (!found) throw new Error(`no management key printed yet:\n${server.stdout()}`)
      return found
    }, { timeout: 10_000, interval: 50 })
    const created = await fetch(`${server.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${managementKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'my-app' }),
    })
    expect(created.status).toBe(201)
    return ((await created.json()) as { key: string }).key
  }

  it('answers the first call with no provider key: chat, a stream, reasoning and a tool round trip', async () => {
    const server = await serve(['--dev'])
    const client = new OpenAI({ baseURL: `${server.url}/api/v1`, apiKey: await regularKeyOf(server), maxRetries: 0 })

    const models = await client.models.list()
    expect(models.data.map((model) => model.id)).toEqual(expect.arrayContaining(['demo/chat', 'demo/tools', 'demo/reasoning']))

    const completion = await client.chat.completions.create({ model: 'demo/chat', messages: [{ role: 'user', content: 'Hello, modelgate!' }] })
    expect(completion.choices[0]?.message.content).toBe('You said "Hello, modelgate!" (2 words, 17 characters). This is demo/chat, a scripted demo model.')
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0)
    expect((completion.usage as unknown as { cost: number }).cost).toBe(0)

    const stream = await client.chat.completions.create({ model: 'demo/chat', messages: [{ role: 'user', content: 'Stream it' }], stream: true, stream_options: { include_usage: true } })
    let streamed = ''
    let chunks = 0
    for await (const chunk of stream) {
      chunks++
      streamed += chunk.choices[0]?.delta.content ?? ''
    }
    expect(chunks).toBeGreaterThan(3)
    expect(streamed).toBe('You said "Stream it" (2 words, 9 characters). This is demo/chat, a scripted demo model.')

    const reasoned = await client.responses.create({ model: 'demo/reasoning', input: 'Why is the sky blue?' })
    expect(reasoned.output.map((item) => item.type)).toEqual(['reasoning', 'message'])
    expect(reasoned.output_text).toBe('You said "Why is the sky blue?" (5 words, 20 characters). This is demo/reasoning, a scripted demo model.')

    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } }, required: ['city', 'days'] } } },
    ]
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo' }]
    const first = await client.chat.completions.create({ model: 'demo/tools', messages, tools })
    const call = first.choices[0]?.message.tool_calls?.[0]
    expect(first.choices[0]?.finish_reason).toBe('tool_calls')
    expect(call?.type === 'function' && call.function.name).toBe('get_weather')
    expect(call?.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ city: 'Weather in Oslo', days: 1 })
    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call!.id, content: 'Snow, -3 C' })
    const second = await client.chat.completions.create({ model: 'demo/tools', messages, tools })
    expect(second.choices[0]?.message.content).toBe('Thanks: get_weather returned Snow, -3 C. This is demo/tools, a scripted demo model.')
  })

  it('serves no demo model outside development mode unless MODELGATE_DEMO_MODELS=1', async () => {
    // Each on a fresh memory store, so each prints a first management key.
    const plain = await serve(['--memory'])
    const plainClient = new OpenAI({ baseURL: `${plain.url}/api/v1`, apiKey: await regularKeyOf(plain), maxRetries: 0 })
    expect((await plainClient.models.list()).data.some((model) => model.id.startsWith('demo/'))).toBe(false)
    await expect(plainClient.chat.completions.create({ model: 'demo/chat', messages: [{ role: 'user', content: 'Hi' }] })).rejects.toThrow(/demo\/chat/)
    await plain.stop()

    const enabled = await serve(['--memory'], { MODELGATE_DEMO_MODELS: '1' })
    const enabledClient = new OpenAI({ baseURL: `${enabled.url}/api/v1`, apiKey: await regularKeyOf(enabled), maxRetries: 0 })
    const answer = await enabledClient.chat.completions.create({ model: 'demo/chat', messages: [{ role: 'user', content: 'Hi' }] })
    expect(answer.choices[0]?.message.content).toMatch(/^You said "Hi"/)
  })
})
