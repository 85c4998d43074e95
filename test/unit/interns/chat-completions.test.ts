/**
 * Intern chat on OpenRouter's SDK path (`POST /interns/{id}/chat/completions`): chat messages in,
 * chat completion chunks out, the conversation named by `session_id`.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { readJson } from '../../helpers/gateway'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import type { RecordedRequest, UpstreamReply } from '../../helpers/upstream'

const MODELS: ModelEntry[] = [
  { slug: 'test/intern', name: 'Intern model', endpoints: [{ provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] },
]
const INSTRUCTIONS = 'You book travel for the team. Never spend without asking.'
const CALL_ID = 'call_Qib2xfCV1qpazcvBOLg3wCNL'
const PROMPT = { kind: 'permission', prompt: 'May I spend $300?' }

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const call = (method: string, path: string, json?: unknown) =>
  harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${harness!.key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
    }),
  )

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

const runningIntern = async () => {
  harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models: MODELS })
  await harness.gateway.admin.setAccountFlags(undefined, { interns: true })
  const created = await readJson(await call('POST', '/interns', { name: 'ada', model: 'test/intern', instructions: INSTRUCTIONS, provision: true }))
  for (let attempt = 0; attempt < 500; attempt++) {
    const intern = await readJson(await call('GET', `/interns/${created.id}`))
    if (intern.status === 'running') return intern
    await settle()
  }
  throw new Error('the intern never ran')
}

const chunk = (model: string, delta: Record<string, unknown>, finishReason: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-CK1m', object: 'chat.completion.chunk', created: 1773906012, model, choices: [{ index: 0, delta, finish_reason: finishReason }], usage: null })}\n\n`
const usageChunk = (model: string, prompt: number, completion: number) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-CK1m', object: 'chat.completion.chunk', created: 1773906012, model, choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })}\n\n`
const sse = (chunks: string[]): UpstreamReply => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, chunks })

const askPermission = (request: RecordedRequest): UpstreamReply =>
  sse([
    chunk(request.json.model, { role: 'assistant', content: null, tool_calls: [{ index: 0, id: CALL_ID, type: 'function', function: { name: 'service_provide_input', arguments: '' } }] }),
    chunk(request.json.model, { tool_calls: [{ index: 0, function: { arguments: JSON.stringify(PROMPT) } }] }),
    chunk(request.json.model, {}, 'tool_calls'),
    usageChunk(request.json.model, 142, 21),
    'data: [DONE]\n\n',
  ])

const answer = (text: string) => (request: RecordedRequest): UpstreamReply =>
  sse([
    chunk(request.json.model, { role: 'assistant', content: '' }),
    ...text.split(/(?<= )/).map((piece) => chunk(request.json.model, { content: piece })),
    chunk(request.json.model, {}, 'stop'),
    usageChunk(request.json.model, 170, 9),
    'data: [DONE]\n\n',
  ])

const chatChunks = async (internId: string, body: Record<string, unknown>) => {
  const response = await call('POST', `/interns/${internId}/chat/completions`, { stream: true, ...body })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  const { events } = await readSseEvents(response)
  expect(events.at(-1)?.data).toBe('[DONE]')
  const chunks = events.slice(0, -1).map((event) => event.data)
  for (const each of chunks) expect(each).toMatchObject({ id: chunks[0].id, object: 'chat.completion.chunk', created: expect.any(Number), model: 'test/intern' })
  return chunks
}

describe('POST /interns/{internId}/chat/completions', () => {
  it('streams the pause as an openrouter.provide_input tool call, and continues the session with the tool reply', async () => {
    const intern = await runningIntern()
    harness!.upstreams.alpha!.setHandler(askPermission)
    const first = await chatChunks(intern.id, { messages: [{ role: 'user', content: 'Book a flight' }] })
    expect(first.map((each) => (each.choices.length > 0 ? each.choices[0].finish_reason : 'final'))).toEqual([null, 'tool_calls', 'final'])
    expect(first[0].choices[0].delta).toEqual({
      role: 'assistant',
      tool_calls: [{ index: 0, id: CALL_ID, type: 'function', function: { name: 'openrouter.provide_input', arguments: JSON.stringify(PROMPT) } }],
    })
    const final = first.at(-1)
    // The turn is not over after tool_calls: no usage yet.
    expect(final).toMatchObject({ choices: [], session_id: expect.stringMatching(/^session-/), usage: null })

    harness!.upstreams.alpha!.setHandler(answer('Booked the 9:40 flight.'))
    const history = [
      { role: 'user', content: 'Book a flight' },
      { role: 'assistant', content: null, tool_calls: [{ id: CALL_ID, type: 'function', function: { name: 'openrouter.provide_input', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: CALL_ID, content: 'allow_once' },
    ]
    const second = await chatChunks(intern.id, { session_id: final.session_id, messages: history })
    expect(second.map((each) => each.choices[0]?.delta.content ?? '').join('')).toBe('Booked the 9:40 flight.')
    expect(second[0].choices[0].delta.role).toBe('assistant')
    expect(second.at(-2).choices[0]).toEqual({ index: 0, delta: {}, finish_reason: 'stop' })
    expect(second.at(-1)).toMatchObject({ choices: [], session_id: final.session_id, usage: { prompt_tokens: 170, completion_tokens: 9, total_tokens: 179 } })
    // Upstream saw the session's conversation, with the caller's answer as the pause call's output.
    expect(harness!.upstreams.alpha!.requests[1]!.json.messages.slice(1)).toEqual([
      { role: 'user', content: 'Book a flight' },
      expect.objectContaining({ role: 'assistant', tool_calls: [expect.objectContaining({ id: CALL_ID, function: { name: 'service_provide_input', arguments: JSON.stringify(PROMPT) } })] }),
      { role: 'tool', tool_call_id: CALL_ID, content: 'allow_once' },
    ])

    // The question was answered: answering again is refused, as is a question of another session.
    const again = await call('POST', `/interns/${intern.id}/chat/completions`, { stream: true, session_id: final.session_id, messages: history })
    expect(again.status).toBe(409)
    expect(await again.json()).toEqual({ error: { code: 409, message: `Question ${CALL_ID} was already answered`, metadata: { reason: 'interaction_not_pending', retryable: false } } })
    const elsewhere = await call('POST', `/interns/${intern.id}/chat/completions`, { stream: true, session_id: 'session-other', messages: history })
    expect(elsewhere.status).toBe(409)
    expect((await elsewhere.json()).error.metadata.reason).toBe('interaction_unknown')
  })

  it('a prompt without session_id starts a new session; a known session_id continues it', async () => {
    const intern = await runningIntern()
    harness!.upstreams.alpha!.setHandler(answer('Hello.'))
    const first = await chatChunks(intern.id, { messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] })
    const fresh = await chatChunks(intern.id, { messages: [{ role: 'user', content: 'Who are you?' }] })
    expect(fresh.at(-1).session_id).not.toBe(first.at(-1).session_id)
    const requests = harness!.upstreams.alpha!.requests
    expect(requests[1]!.json.messages.slice(1)).toEqual([{ role: 'user', content: 'Who are you?' }])
    await chatChunks(intern.id, { session_id: fresh.at(-1).session_id, messages: [{ role: 'user', content: 'And again?' }] })
    expect(requests[2]!.json.messages.slice(1).map((message: any) => message.content)).toEqual(['Who are you?', 'Hello.', 'And again?'])
    // A caller-chosen id the intern never saw starts a new session under that id.
    const named = await chatChunks(intern.id, { session_id: 'my-session', messages: [{ role: 'user', content: 'New topic' }] })
    expect(named.at(-1).session_id).toBe('my-session')
    expect(requests[3]!.json.messages.slice(1)).toEqual([{ role: 'user', content: 'New topic' }])
  })

  it('approval_mode manual tells the built-in intern to ask before acting; self-drive does not', async () => {
    const intern = await runningIntern()
    harness!.upstreams.alpha!.setHandler(answer('Sure.'))
    await chatChunks(intern.id, { approval_mode: 'manual', messages: [{ role: 'user', content: 'Book it' }] })
    await chatChunks(intern.id, { approval_mode: 'self-drive', messages: [{ role: 'user', content: 'Book it' }] })
    const [manual, selfDrive] = harness!.upstreams.alpha!.requests.map((request) => request.json.messages[0].content as string)
    expect(manual).toContain('Approval mode is manual')
    expect(selfDrive).not.toContain('Approval mode is manual')
  })

  it('a tool reply continues the run under the approval mode it started with', async () => {
    const intern = await runningIntern()
    harness!.upstreams.alpha!.setHandler(askPermission)
    const asked = await chatChunks(intern.id, { approval_mode: 'manual', messages: [{ role: 'user', content: 'Book a flight' }] })
    const sessionId = asked.at(-1).session_id
    const reply = (mode?: string) => ({ session_id: sessionId, ...(mode ? { approval_mode: mode } : {}), messages: [{ role: 'tool', tool_call_id: CALL_ID, content: 'allow_once' }] })
    const refused = await call('POST', `/interns/${intern.id}/chat/completions`, { stream: true, ...reply('self-drive') })
    expect(await refused.json()).toEqual({
      error: { code: 400, message: 'body.approval_mode: a tool reply continues the run under the mode it started with (manual)', metadata: { reason: 'invalid_body', retryable: false } },
    })
    harness!.upstreams.alpha!.setHandler(answer('Booked.'))
    await chatChunks(intern.id, reply())
    const [first, second] = harness!.upstreams.alpha!.requests.map((request) => request.json.messages[0].content as string)
    expect(first).toContain('Approval mode is manual')
    expect(second).toContain('Approval mode is manual')
  })

  it('refuses what it would not honour with 400 naming the field', async () => {
    const intern = await runningIntern()
    const cases: [Record<string, unknown>, string][] = [
      [{ messages: [{ role: 'user', content: 'Hi' }] }, 'body.stream: is required'],
      [{ stream: false, messages: [{ role: 'user', content: 'Hi' }] }, 'body.stream: must be true: intern chat only streams'],
      [{ stream: true, model: 'openai/gpt-4.1', messages: [{ role: 'user', content: 'Hi' }] }, 'body.model: the intern runs test/intern; PATCH the intern to change its model'],
      [{ stream: true, temperature: 0.2, messages: [{ role: 'user', content: 'Hi' }] }, 'body.temperature: unknown field'],
      [{ stream: true, messages: [] }, 'body.messages: must not be empty'],
      [{ stream: true, messages: [{ role: 'assistant', content: 'Hi' }] }, 'body.messages.0.role: the last message must be a user prompt or a tool reply'],
      [{ stream: true, messages: [{ role: 'tool', tool_call_id: CALL_ID, content: 'yes' }] }, 'body.session_id: required when the last message is a tool reply'],
      [{ stream: true, approval_mode: 'auto', messages: [{ role: 'user', content: 'Hi' }] }, 'body.approval_mode: must be self-drive or manual'],
    ]
    for (const [body, message] of cases) {
      const response = await call('POST', `/interns/${intern.id}/chat/completions`, body)
      expect(response.status, message).toBe(400)
      expect(await response.json()).toEqual({ error: { code: 400, message, metadata: { reason: 'invalid_body', retryable: false } } })
    }
    // The intern's own model may be named.
    harness!.upstreams.alpha!.setHandler(answer('Hi.'))
    await chatChunks(intern.id, { model: 'test/intern', messages: [{ role: 'user', content: 'Hi' }] })
  })
})
