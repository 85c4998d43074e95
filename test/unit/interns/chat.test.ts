import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { inProcessRuntime } from '../../../src/interns/in-process'
import type { InternRuntime } from '../../../src/interns/runtime'
import { readJson } from '../../helpers/gateway'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import { assertValidEventSequence } from '../../helpers/stream-events'
import type { RecordedRequest, UpstreamReply } from '../../helpers/upstream'

/** One custom chat-completions provider serving the intern's model and the one it is switched to. */
const MODELS: ModelEntry[] = [
  { slug: 'test/intern', name: 'Intern model', endpoints: [{ provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] },
  { slug: 'test/next', name: 'Next intern model', endpoints: [{ provider: 'alpha', model: 'alpha-next', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] },
]

const INSTRUCTIONS = 'You book travel for the team. Never spend without asking.'
const PROMPT = { kind: 'permission', prompt: 'May I spend $300?' }

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async (options: { internRuntime?: InternRuntime } = {}) => {
  harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models: MODELS, ...options })
  await harness.gateway.admin.setAccountFlags(undefined, { interns: true })
  return harness
}

const call = (method: string, path: string, init: { json?: unknown; body?: string; headers?: Record<string, string> } = {}) =>
  harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${harness!.key}`,
        ...(init.json === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      body: init.json === undefined ? init.body : JSON.stringify(init.json),
    }),
  )

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

const waitForIntern = async (id: string, until: (intern: any) => boolean) => {
  let last: unknown
  for (let attempt = 0; attempt < 500; attempt++) {
    const response = await call('GET', `/interns/${id}`)
    last = await response.json()
    if (response.status === 200 && until(last)) return last as any
    await settle()
  }
  throw new Error(`intern ${id} never reached the expected state; last seen ${JSON.stringify(last)}`)
}

/** Creates an intern with `provision: true` and waits until it runs. */
const runningIntern = async (body: Record<string, unknown> = {}) => {
  const response = await call('POST', '/interns', { json: { name: 'ada', model: 'test/intern', instructions: INSTRUCTIONS, provision: true, ...body } })
  expect(response.status).toBe(201)
  const intern = await readJson(response)
  return waitForIntern(intern.id, (current) => current.status === 'running')
}

// Chat Completions stream chunks exactly as OpenAI sends them (one `data:` line per chunk, a usage chunk, `[DONE]`).
const chunk = (model: string, delta: Record<string, unknown>, finishReason: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-CK1mVq8dT0pZrW4yXb7nE2sA9uHfG',
    object: 'chat.completion.chunk',
    created: 1773906012,
    model,
    service_tier: 'default',
    system_fingerprint: 'fp_6f2eabb9a5',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    usage: null,
  })}\n\n`

const usageChunk = (model: string, prompt: number, completion: number) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-CK1mVq8dT0pZrW4yXb7nE2sA9uHfG',
    object: 'chat.completion.chunk',
    created: 1773906012,
    model,
    service_tier: 'default',
    system_fingerprint: 'fp_6f2eabb9a5',
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
  })}\n\n`

const sse = (chunks: string[]): UpstreamReply => ({
  status: 200,
  headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
  chunks,
})

const CALL_ID = 'call_Qib2xfCV1qpazcvBOLg3wCNL'

/** The model pauses: it calls the pause tool (under its upstream name), arguments split across chunks. */
const askPermission = (request: RecordedRequest): UpstreamReply => {
  const model = `${request.json.model}-2025-04-14`
  return sse([
    chunk(model, {
      role: 'assistant',
      content: null,
      tool_calls: [{ index: 0, id: CALL_ID, type: 'function', function: { name: 'service_provide_input', arguments: '' } }],
      refusal: null,
    }),
    chunk(model, { tool_calls: [{ index: 0, function: { arguments: '{"kind":"permission",' } }] }),
    chunk(model, { tool_calls: [{ index: 0, function: { arguments: '"prompt":"May I spend $300?"}' } }] }),
    chunk(model, {}, 'tool_calls'),
    usageChunk(model, 142, 21),
    'data: [DONE]\n\n',
  ])
}

const answer = (text: string) => (request: RecordedRequest): UpstreamReply => {
  const model = `${request.json.model}-2025-04-14`
  return sse([
    chunk(model, { role: 'assistant', content: '', refusal: null }),
    ...text.split(/(?<= )/).map((piece) => chunk(model, { content: piece })),
    chunk(model, {}, 'stop'),
    usageChunk(model, 170, 9),
    'data: [DONE]\n\n',
  ])
}

const chat = async (internId: string, input: unknown) => {
  const response = await call('POST', `/interns/${internId}/chat`, { json: { input } })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  const { events } = await readSseEvents(response)
  expect(events.at(-1)?.data).toBe('[DONE]')
  const data = events.slice(0, -1).map((event) => event.data)
  expect(data[0].type).toBe('response.created')
  assertValidEventSequence(data)
  const completed = data.at(-1)
  expect(completed.type).toBe('response.completed')
  return { data, final: completed.response }
}

describe('POST /interns/{internId}/chat', () => {
  it('pauses with service.provide_input and continues the conversation with the caller answer', async () => {
    const h = await start()
    const intern = await runningIntern()
    h.upstreams.alpha!.setHandler(askPermission)

    // Turn 1: the intern asks for permission.
    const first = await chat(intern.id, 'Book a flight')
    const added = first.data.find((event) => event.type === 'response.output_item.added')
    expect(added.item).toMatchObject({ type: 'function_call', name: 'service.provide_input', call_id: CALL_ID })
    const done = first.data.find((event) => event.type === 'response.output_item.done')
    expect(done.item).toMatchObject({ type: 'function_call', name: 'service.provide_input', call_id: CALL_ID, status: 'completed' })
    expect(JSON.parse(done.item.arguments)).toEqual(PROMPT)
    expect(first.data.find((event) => event.type === 'response.function_call_arguments.done')).toMatchObject({ name: 'service.provide_input' })
    expect(first.final).toMatchObject({ status: 'completed', model: 'test/intern' })
    expect(first.final.output).toEqual([done.item])
    expect(first.final.tools.map((tool: any) => tool.name)).toEqual(['service.provide_input'])
    // The upstream name never reaches the client as a tool name.
    expect(JSON.stringify(first.data)).not.toContain('"name":"service_provide_input"')

    // What went upstream: the intern's model, instructions and the pause tool.
    const turn1 = h.upstreams.alpha!.requests[0]!.json
    expect(turn1).toMatchObject({ model: 'alpha-model', stream: true })
    expect(turn1.messages[0].role).toBe('system')
    expect(turn1.messages[0].content).toContain(INSTRUCTIONS)
    expect(turn1.messages.slice(1)).toEqual([{ role: 'user', content: 'Book a flight' }])
    expect(turn1.tools).toHaveLength(1)
    expect(turn1.tools[0]).toMatchObject({
      type: 'function',
      function: {
        name: 'service_provide_input',
        parameters: { type: 'object', required: ['kind', 'prompt'], properties: { kind: { enum: ['permission', 'question'] } } },
      },
    })

    // Turn 2: the caller answers the call; the upstream sees the whole conversation.
    h.upstreams.alpha!.setHandler(answer('Booked the 9:40 flight for $300.'))
    const second = await chat(intern.id, [{ type: 'function_call_output', call_id: done.item.call_id, output: 'Yes' }])
    const turn2 = h.upstreams.alpha!.requests[1]!.json
    expect(turn2.model).toBe('alpha-model')
    expect(turn2.messages[0]).toEqual(turn1.messages[0])
    expect(turn2.messages.slice(1)).toEqual([
      { role: 'user', content: 'Book a flight' },
      {
        role: 'assistant',
        content: expect.toSatisfy((content: unknown) => content === null || content === ''),
        tool_calls: [{ id: CALL_ID, type: 'function', function: { name: 'service_provide_input', arguments: JSON.stringify(PROMPT) } }],
      },
      { role: 'tool', tool_call_id: CALL_ID, content: 'Yes' },
    ])
    expect(turn2.tools).toEqual(turn1.tools)
    expect(second.final).toMatchObject({ status: 'completed', model: 'test/intern' })
    expect(second.final.output).toHaveLength(1)
    expect(second.final.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Booked the 9:40 flight for $300.' }],
    })
    const text = second.data
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('')
    expect(text).toBe('Booked the 9:40 flight for $300.')

    // The conversation is kept with the intern: user message, call, answer, reply.
    const stored = await h.gateway.storage.get<any>('intern_conversations', intern.id)
    expect(stored?.data.items.map((item: any) => item.type)).toEqual(['message', 'function_call', 'function_call_output', 'message'])
    expect(stored?.data.items[1]).toMatchObject({ name: 'service.provide_input', call_id: CALL_ID })
  })

  it('a runtime answering with SSE text (context.respond) gets the same public tool name and stored turn', async () => {
    // A user's runtime: it runs the turn through `respond` and returns the SSE Response.
    const textRuntime: InternRuntime = {
      ...inProcessRuntime(),
      chat: (intern, history, input, context) =>
        context.respond(
          { model: intern.model, input: [...history, ...input], tools: [{ type: 'function', name: 'service_provide_input', parameters: { type: 'object' } }], stream: true },
          context.signal,
        ),
    }
    const h = await start({ internRuntime: textRuntime })
    const intern = await runningIntern()
    h.upstreams.alpha!.setHandler(askPermission)
    const first = await chat(intern.id, 'Book a flight')
    const done = first.data.find((event) => event.type === 'response.output_item.done')
    expect(done.item).toMatchObject({ type: 'function_call', name: 'service.provide_input', call_id: CALL_ID })
    expect(first.final.tools.map((tool: any) => tool.name)).toEqual(['service.provide_input'])
    expect(JSON.stringify(first.data)).not.toContain('"name":"service_provide_input"')
    const stored = await h.gateway.storage.get<any>('intern_conversations', intern.id)
    expect(stored?.data.items.map((item: any) => item.type)).toEqual(['message', 'function_call'])
    expect(stored?.data.items[1]).toMatchObject({ name: 'service.provide_input', call_id: CALL_ID })
  })

  it('keeps reporting the running model after a model update, until the next provision', async () => {
    const h = await start()
    const intern = await runningIntern()
    h.upstreams.alpha!.setHandler(answer('Hello.'))
    expect((await chat(intern.id, 'Hi')).final.model).toBe('test/intern')

    const patched = await call('PATCH', `/interns/${intern.id}`, { json: { model: 'test/next' } })
    expect(patched.status).toBe(200)
    expect((await readJson(patched)).model).toBe('test/next')
    expect((await readJson(await call('GET', `/interns/${intern.id}`))).model).toBe('test/next')

    const stillRunning = await chat(intern.id, 'Still there?')
    expect(stillRunning.final.model).toBe('test/intern')
    expect(stillRunning.data[0].response.model).toBe('test/intern')
    expect(h.upstreams.alpha!.requests[1]!.json.model).toBe('alpha-model')

    expect((await call('POST', `/interns/${intern.id}/suspend`)).status).toBe(200)
    expect((await call('POST', `/interns/${intern.id}/provision`)).status).toBe(202)
    await waitForIntern(intern.id, (current) => current.status === 'running')
    const afterProvision = await chat(intern.id, 'And now?')
    expect(afterProvision.final.model).toBe('test/next')
    expect(h.upstreams.alpha!.requests[2]!.json.model).toBe('alpha-next')
  })

  it('answers 409 not_running for an intern that is not running', async () => {
    const h = await start()
    const created = await readJson(await call('POST', '/interns', { json: { name: 'ada', model: 'test/intern' } }))
    const response = await call('POST', `/interns/${created.id}/chat`, { json: { input: 'Book a flight' } })
    expect(response.status).toBe(409)
    expect(await readJson(response)).toEqual({
      error: { code: 409, message: 'The intern is stopped; provision it before chatting', metadata: { reason: 'not_running', retryable: false } },
    })
    expect(h.upstreams.alpha!.requests).toHaveLength(0)
  })

  it('validates the body like every intern route', async () => {
    const h = await start()
    const intern = await runningIntern()
    const refusals: Array<[{ json?: unknown; body?: string; headers?: Record<string, string> }, number, string, string]> = [
      [{ json: {} }, 400, 'body.input: is required', 'invalid_body'],
      [{ json: { input: '' } }, 400, 'body.input: must not be empty', 'invalid_body'],
      [{ json: { input: [] } }, 400, 'body.input: must not be empty', 'invalid_body'],
      [{ body: '{"input":"hi"}', headers: { 'content-type': 'text/plain' } }, 415, 'Content-Type must be application/json', 'unsupported_media_type'],
      [{ body: '{"input":', headers: { 'content-type': 'application/json' } }, 400, 'Malformed JSON in request body: unexpected end of input, expected a value', 'invalid_body'],
    ]
    for (const [init, code, message, reason] of refusals) {
      const response = await call('POST', `/interns/${intern.id}/chat`, init)
      expect(response.status, message).toBe(code)
      expect(await readJson(response)).toEqual({ error: { code, message, metadata: { reason, retryable: false } } })
    }
    expect(h.upstreams.alpha!.requests).toHaveLength(0)
  })

  it('a failed turn leaves the conversation as it was, so the turn can be retried', async () => {
    const h = await start()
    const intern = await runningIntern()
    h.upstreams.alpha!.setHandler(() => ({
      status: 500,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}',
    }))
    const failed = await call('POST', `/interns/${intern.id}/chat`, { json: { input: 'Book a flight' } })
    expect(failed.status).toBe(502)
    const body = await readJson(failed)
    expect(body).toEqual({
      error: {
        code: 502,
        message: expect.stringContaining('The server had an error'),
        // The reason of an upstream failure is not pinned here (see the report); it is retryable.
        metadata: { reason: expect.any(String), retryable: true },
      },
    })
    expect(await h.gateway.storage.get('intern_conversations', intern.id)).toBeNull()

    h.upstreams.alpha!.setHandler(askPermission)
    await chat(intern.id, 'Book a flight')
    expect(h.upstreams.alpha!.requests.at(-1)!.json.messages.slice(1)).toEqual([{ role: 'user', content: 'Book a flight' }])
  })

  it('deleting the intern deletes its conversation', async () => {
    const h = await start()
    const intern = await runningIntern()
    h.upstreams.alpha!.setHandler(askPermission)
    await chat(intern.id, 'Book a flight')
    expect(await h.gateway.storage.get('intern_conversations', intern.id)).not.toBeNull()
    expect((await call('DELETE', `/interns/${intern.id}`)).status).toBe(202)
    for (let attempt = 0; attempt < 500 && (await call('GET', `/interns/${intern.id}`)).status !== 404; attempt++) await settle()
    expect((await call('GET', `/interns/${intern.id}`)).status).toBe(404)
    expect(await h.gateway.storage.get('intern_conversations', intern.id)).toBeNull()
    expect(await h.gateway.storage.get('vaults', intern.vault_id)).toBeNull()
  })
})

describe('an intern from create to delete', () => {
  it('is created, provisioned, chats (pausing for permission and resuming with the answer), is suspended and deleted', async () => {
    await start()
    // Create without provisioning: stopped, with its private vault.
    const created = await call('POST', '/interns', { json: { name: 'ada', model: 'test/intern', instructions: INSTRUCTIONS } })
    expect(created.status).toBe(201)
    const intern = await readJson(created)
    expect(intern).toMatchObject({ status: 'stopped', hostname: null, progress: null })
    expect(intern.vault_id).toMatch(/^[0-9a-f-]{36}$/)

    // Provision: 202, then running with a hostname.
    const provision = await call('POST', `/interns/${intern.id}/provision`)
    expect(provision.status).toBe(202)
    expect(await provision.json()).toEqual({ provisioning: true })
    const running = await waitForIntern(intern.id, (current) => current.status === 'running')
    expect(running.hostname).toMatch(/^ada-[0-9a-f]{6}\.interns\.local$/)
    expect(running.progress).toBeNull()

    // Chat: the intern pauses to ask; the caller answers in the next turn.
    harness!.upstreams.alpha!.setHandler(askPermission)
    const paused = await chat(intern.id, 'Book me a flight to Lisbon')
    const call1 = paused.final.output.find((item: { type: string }) => item.type === 'function_call')
    expect(call1).toMatchObject({ name: 'service.provide_input', call_id: CALL_ID })
    expect(JSON.parse(call1.arguments)).toEqual(PROMPT)
    harness!.upstreams.alpha!.setHandler(answer('Booked: TAP 1234, $289.'))
    const resumed = await chat(intern.id, [{ type: 'function_call_output', call_id: CALL_ID, output: 'Yes, go ahead' }])
    expect(resumed.final.model).toBe('test/intern')
    expect(resumed.final.output[0].content[0].text).toBe('Booked: TAP 1234, $289.')
    const second = harness!.upstreams.alpha!.requests.at(-1)!.json
    expect(second.messages.map((message: { role: string }) => message.role)).toEqual(['system', 'user', 'assistant', 'tool'])

    // Suspend: stopped, and chat is refused until it is provisioned again.
    const suspended = await call('POST', `/interns/${intern.id}/suspend`)
    expect(suspended.status).toBe(200)
    expect(await suspended.json()).toEqual({ suspended: true })
    expect((await readJson(await call('GET', `/interns/${intern.id}`))).status).toBe('stopped')
    expect((await call('POST', `/interns/${intern.id}/chat`, { json: { input: 'hi' } })).status).toBe(409)

    // Delete: 202, then gone, with its vault.
    const deleted = await call('DELETE', `/interns/${intern.id}`)
    expect(deleted.status).toBe(202)
    expect(await deleted.json()).toEqual({ deleting: true })
    for (let attempt = 0; attempt < 500 && (await call('GET', `/interns/${intern.id}`)).status !== 404; attempt++) await settle()
    expect((await call('GET', `/interns/${intern.id}`)).status).toBe(404)
    expect((await harness!.gateway.storage.get('vaults', intern.vault_id))).toBeNull()
  })
})
