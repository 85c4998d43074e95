/**
 * The settings only `/chat/completions` and `/messages` carry (`stop`, `seed`, `logprobs` / `top_logprobs`,
 * `logit_bias`, `stop_sequences`), against loopback upstreams of every family: what each upstream is sent, how
 * routing keeps them from endpoints that would drop them, and what the answer says about them (the matched stop
 * sequence, log probabilities). Replies are written inline: each is the smallest answer of that wire format that
 * carries the field under test.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { ModelEntry } from '../../../src/engine/models'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import type { UpstreamReply } from '../../helpers/upstream'

const EXTENSIONS = ['max_output_tokens', 'stop', 'seed', 'logprobs', 'top_logprobs', 'logit_bias']

const endpoint = (provider: string, model: string, prompt: number, supportedParameters = EXTENSIONS) => ({
  provider,
  model,
  contextLength: 100_000,
  pricing: { prompt, completion: prompt * 2 },
  supportedParameters,
})

const MODELS: ModelEntry[] = [
  // The Responses endpoint is the cheaper one, so routing tries it first unless an extension rules it out.
  { slug: 'acme/both', name: 'Both', endpoints: [endpoint('openai', 'gpt-x', 0.000001), endpoint('groq', 'llama-x', 0.000002)] },
  { slug: 'acme/claude', name: 'Claude', endpoints: [endpoint('anthropic', 'claude-x', 0.000001)] },
  { slug: 'acme/gemini', name: 'Gemini', endpoints: [endpoint('google-ai-studio', 'gemini-x', 0.000001)] },
  { slug: 'acme/gpt', name: 'GPT', endpoints: [endpoint('openai', 'gpt-x', 0.000001)] },
  // The catalog lists no stop for it: the adapter could send one, the model is not known to take it.
  { slug: 'acme/unlisted', name: 'Unlisted', endpoints: [endpoint('groq', 'llama-y', 0.000001, ['max_output_tokens'])] },
]

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const start = async () => {
  harness = await createResponsesHarness({ openai: {}, groq: {}, anthropic: {}, 'google-ai-studio': {} }, { models: MODELS })
  return harness
}

const post = (path: string, body: Record<string, unknown>) =>
  harness!.gateway.fetch(
    new Request(`http://gateway.test/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )

const chat = (body: Record<string, unknown>) => post('/chat/completions', { messages: [{ role: 'user', content: 'Count' }], ...body })
const messages = (body: Record<string, unknown>) => post('/messages', { max_tokens: 100, messages: [{ role: 'user', content: 'Count' }], ...body })

const json = (body: unknown): UpstreamReply => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const sse = (events: Array<{ event?: string; data: unknown }>): UpstreamReply => ({
  status: 200,
  headers: { 'content-type': 'text/event-stream' },
  chunks: events.map(({ event, data }) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`),
})

const USAGE = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 }

const chatCompletion = (choice: Record<string, unknown>) =>
  json({ id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: '1, 2, ' }, finish_reason: 'stop', ...choice }], usage: USAGE })

const TOKENS = [
  { token: '1', logprob: -0.01, bytes: [49], top_logprobs: [{ token: '1', logprob: -0.01, bytes: [49] }, { token: 'One', logprob: -4.5, bytes: [79, 110, 101] }] },
  { token: ',', logprob: -0.2, bytes: [44], top_logprobs: [{ token: ',', logprob: -0.2, bytes: [44] }, { token: '.', logprob: -1.8, bytes: [46] }] },
]

const anthropicMessage = (stop: { stop_reason: string; stop_sequence: string | null }) =>
  json({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: '1, 2, ' }], ...stop, usage: { input_tokens: 5, output_tokens: 3 } })

describe('stop and seed', () => {
  it('sends /chat/completions stop, seed and logit_bias to a Chat Completions upstream, passing over the cheaper Responses endpoint', async () => {
    const t = await start()
    t.upstreams.groq!.setHandler(() => chatCompletion({}))
    const response = await chat({ model: 'acme/both', stop: 'END', seed: 7, logit_bias: { '1734': -100 } })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ model: 'acme/both', provider: 'Groq', choices: [{ finish_reason: 'stop', message: { content: '1, 2, ' } }] })
    expect(t.upstreams.openai!.requests).toHaveLength(0)
    expect(t.upstreams.groq!.requests[0]!.json).toMatchObject({ model: 'llama-x', stop: ['END'], seed: 7, logit_bias: { '1734': -100 } })

    // Without them the cheaper endpoint serves, and nothing of the kind is sent.
    t.upstreams.openai!.setHandler(() => json({ id: 'resp_1', object: 'response', status: 'completed', output: [], usage: { input_tokens: 1, output_tokens: 0, total_tokens: 1 } }))
    expect((await chat({ model: 'acme/both', stop: null, seed: null, logit_bias: {} })).status).toBe(200)
    expect(t.upstreams.openai!.requests).toHaveLength(1)
    for (const field of ['stop', 'seed', 'logit_bias', 'top_logprobs']) expect(t.upstreams.openai!.requests[0]!.json).not.toHaveProperty(field)
  })

  it('sends stop sequences to Anthropic, whose matched sequence ends /messages with stop_reason stop_sequence', async () => {
    const t = await start()
    t.upstreams.anthropic!.setHandler(() => anthropicMessage({ stop_reason: 'stop_sequence', stop_sequence: 'END' }))
    const response = await messages({ model: 'acme/claude', stop_sequences: ['END', 'STOP'] })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END', content: [{ type: 'text', text: '1, 2, ' }] })
    expect(t.upstreams.anthropic!.requests[0]!.json.stop_sequences).toEqual(['END', 'STOP'])

    // On /chat/completions the same stop is OpenAI's finish_reason "stop".
    const completion = await (await chat({ model: 'acme/claude', stop: ['END'] })).json()
    expect(completion.choices[0].finish_reason).toBe('stop')
    expect(t.upstreams.anthropic!.requests[1]!.json.stop_sequences).toEqual(['END'])
  })

  it('streams the matched stop sequence in message_delta, as Anthropic does', async () => {
    const t = await start()
    t.upstreams.anthropic!.setHandler(() =>
      sse([
        { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 5, output_tokens: 1 } } } },
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '1, 2, ' } } },
        { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
        { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' }, usage: { output_tokens: 3 } } },
        { event: 'message_stop', data: { type: 'message_stop' } },
      ]),
    )
    const { events } = await readSseEvents(await messages({ model: 'acme/claude', stop_sequences: ['END'], stream: true }))
    const delta = events.find((event) => event.event === 'message_delta')!.data
    expect(delta.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'END' })
    expect(t.upstreams.anthropic!.requests[0]!.json).toMatchObject({ stream: true, stop_sequences: ['END'] })
  })

  it('sends /messages stop_sequences to a Chat Completions upstream as stop; only a stop_reason naming one of them (vLLM) is reported as matched', async () => {
    const t = await start()
    t.upstreams.groq!.setHandler(() => chatCompletion({ stop_reason: 'END' }))
    const matched = await (await messages({ model: 'acme/both', stop_sequences: ['END'] })).json()
    expect(matched).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' })
    expect(t.upstreams.groq!.requests[0]!.json.stop).toEqual(['END'])

    // OpenAI's plain "stop" does not say which sequence, if any, ended the answer; a stop_reason naming none asked for is not believed.
    for (const choice of [{}, { stop_reason: 'OTHER' }, { stop_reason: 50256 }]) {
      t.upstreams.groq!.setHandler(() => chatCompletion(choice))
      expect(await (await messages({ model: 'acme/both', stop_sequences: ['END'] })).json(), JSON.stringify(choice)).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null })
    }
  })

  it('sends stop and seed to Gemini in generationConfig', async () => {
    const t = await start()
    t.upstreams['google-ai-studio']!.setHandler(() =>
      json({ candidates: [{ content: { role: 'model', parts: [{ text: '1, 2, ' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 } }),
    )
    expect((await chat({ model: 'acme/gemini', stop: ['END', 'FIN'], seed: 42 })).status).toBe(200)
    expect(t.upstreams['google-ai-studio']!.requests[0]!.json.generationConfig).toMatchObject({ stopSequences: ['END', 'FIN'], seed: 42 })
    // Gemini's STOP does not say whether a stop sequence matched.
    expect(await (await messages({ model: 'acme/gemini', stop_sequences: ['END'] })).json()).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null })
  })

  it('answers 400 naming the caller field when no endpoint can honour it, before any upstream is called', async () => {
    const t = await start()
    const refusals: Array<[Response, unknown]> = [
      [await chat({ model: 'acme/gpt', stop: ['END'] }), { error: { code: 400, message: 'body.stop: not supported by any endpoint of acme/gpt' } }],
      [await chat({ model: 'acme/claude', seed: 1, stop: 'END' }), { error: { code: 400, message: 'body.seed: not supported by any endpoint of acme/claude' } }],
      [await chat({ model: 'acme/gemini', logit_bias: { '1': 1 } }), { error: { code: 400, message: 'body.logit_bias: not supported by any endpoint of acme/gemini' } }],
      [await chat({ model: 'acme/unlisted', stop: ['END'] }), { error: { code: 400, message: 'body.stop: not supported by any endpoint of acme/unlisted' } }],
      [
        await messages({ model: 'acme/gpt', stop_sequences: ['END'] }),
        { type: 'error', error: { type: 'invalid_request_error', message: 'body.stop_sequences: not supported by any endpoint of acme/gpt' } },
      ],
    ]
    for (const [response, body] of refusals) {
      expect(response.status).toBe(400)
      expect(await response.json()).toEqual(body)
    }
    for (const upstream of Object.values(t.upstreams)) expect(upstream.requests).toHaveLength(0)
  })

  it('falls back to a model whose endpoint honours the extension, and cannot be smuggled in on /responses', async () => {
    const t = await start()
    t.upstreams.anthropic!.setHandler(() => anthropicMessage({ stop_reason: 'end_turn', stop_sequence: null }))
    const response = await chat({ model: 'acme/gpt', models: ['acme/claude'], stop: ['END'] })
    expect(await response.json()).toMatchObject({ model: 'acme/claude', provider: 'Anthropic' })
    expect(t.upstreams.openai!.requests).toHaveLength(0)

    // /responses has no such fields: an unknown top-level `stop` is refused there, as every unknown field is.
    const smuggled = await t.post({ model: 'acme/claude', input: 'Count', stop: ['END'], seed: 1 })
    expect(smuggled.status).toBe(400)
    expect((await smuggled.json()).error.message).toBe('body.stop: unknown field')
    expect(t.upstreams.anthropic!.requests).toHaveLength(1)
  })

  it('lists an extension on GET /models only for the endpoints whose adapter sends it', async () => {
    const t = await start()
    const get = async (path: string) => (await t.gateway.fetch(new Request(`http://gateway.test/api/v1${path}`))).json()
    const endpoints = (await get('/models/acme/both/endpoints')).data.endpoints
    expect(endpoints.map((one: { tag: string; supported_parameters: string[] }) => [one.tag, one.supported_parameters])).toEqual([
      ['openai', ['max_tokens', 'logprobs', 'top_logprobs']],
      ['groq', ['max_tokens', 'stop', 'seed', 'logprobs', 'top_logprobs', 'logit_bias']],
    ])
    const listed = (await get('/models?supported_parameters=stop')).data.map((model: { id: string }) => model.id)
    expect(listed).toEqual(expect.arrayContaining(['acme/both', 'acme/claude', 'acme/gemini']))
    expect(listed).not.toContain('acme/gpt')
    expect(listed).not.toContain('acme/unlisted')
    expect((await get('/models/acme/claude/endpoints')).data.endpoints[0].supported_parameters).toEqual(['max_tokens', 'stop'])
  })
})

describe('log probabilities', () => {
  it('asks a Responses upstream with include and top_logprobs, and answers choices[].logprobs in the Chat Completions shape', async () => {
    const t = await start()
    t.upstreams.openai!.setHandler(() =>
      json({
        id: 'resp_1',
        object: 'response',
        status: 'completed',
        output: [{ id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: '1,', annotations: [], logprobs: TOKENS }] }],
        usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
      }),
    )
    const response = await chat({ model: 'acme/both', logprobs: true, top_logprobs: 2 })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.provider).toBe('OpenAI')
    expect(body.choices[0].logprobs).toEqual({ content: TOKENS, refusal: null })
    expect(t.upstreams.openai!.requests[0]!.json).toMatchObject({ include: ['message.output_text.logprobs'], top_logprobs: 2 })
    expect(t.upstreams.groq!.requests).toHaveLength(0)
  })

  it('streams a Responses upstream text deltas with their logprobs on the matching chunks', async () => {
    const t = await start()
    const item = { id: 'msg_1', type: 'message', role: 'assistant', status: 'in_progress', content: [] }
    const part = { type: 'output_text', text: '', annotations: [], logprobs: [] }
    const at = { item_id: 'msg_1', output_index: 0, content_index: 0 }
    t.upstreams.openai!.setHandler(() =>
      sse([
        { data: { type: 'response.created', sequence_number: 0, response: { id: 'resp_1', object: 'response', status: 'in_progress', output: [] } } },
        { data: { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item } },
        { data: { type: 'response.content_part.added', sequence_number: 2, ...at, part } },
        { data: { type: 'response.output_text.delta', sequence_number: 3, ...at, delta: '1', logprobs: [TOKENS[0]] } },
        { data: { type: 'response.output_text.delta', sequence_number: 4, ...at, delta: ',', logprobs: [TOKENS[1]] } },
        { data: { type: 'response.output_text.done', sequence_number: 5, ...at, text: '1,', logprobs: TOKENS } },
        { data: { type: 'response.content_part.done', sequence_number: 6, ...at, part: { ...part, text: '1,', logprobs: TOKENS } } },
        { data: { type: 'response.output_item.done', sequence_number: 7, output_index: 0, item: { ...item, status: 'completed', content: [{ ...part, text: '1,', logprobs: TOKENS }] } } },
        { data: { type: 'response.completed', sequence_number: 8, response: { id: 'resp_1', object: 'response', status: 'completed', output: [], usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } } } },
      ]),
    )
    const { events } = await readSseEvents(await chat({ model: 'acme/both', logprobs: true, top_logprobs: 2, stream: true }))
    const choices = events.slice(0, -1).flatMap((event) => event.data.choices)
    expect(choices.filter((choice: { delta: { content?: string } }) => choice.delta.content)).toEqual([
      { index: 0, delta: { content: '1' }, logprobs: { content: [TOKENS[0]], refusal: null }, finish_reason: null },
      { index: 0, delta: { content: ',' }, logprobs: { content: [TOKENS[1]], refusal: null }, finish_reason: null },
    ])
    expect(t.upstreams.openai!.requests[0]!.json).toMatchObject({ stream: true, include: ['message.output_text.logprobs'], top_logprobs: 2 })
  })

  it('reads a Chat Completions upstream logprobs.content, whole and streamed, each chunk with its own tokens', async () => {
    const t = await start()
    const prefer = { provider: { order: ['groq'] } }
    t.upstreams.groq!.setHandler(() => chatCompletion({ message: { role: 'assistant', content: '1,' }, logprobs: { content: TOKENS, refusal: null } }))
    const whole = await (await chat({ model: 'acme/both', logprobs: true, top_logprobs: 2, ...prefer })).json()
    expect(whole.choices[0].logprobs).toEqual({ content: TOKENS, refusal: null })
    expect(t.upstreams.groq!.requests[0]!.json).toMatchObject({ logprobs: true, top_logprobs: 2 })

    const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      data: { id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null, ...extra }] },
    })
    t.upstreams.groq!.setHandler(() =>
      sse([
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: '1' }, { logprobs: { content: [TOKENS[0]] } }),
        chunk({ content: ',' }, { logprobs: { content: [TOKENS[1]] } }),
        chunk({}, { finish_reason: 'stop' }),
        { data: { id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [], usage: USAGE } },
        { data: '[DONE]' },
      ]),
    )
    const { events } = await readSseEvents(await chat({ model: 'acme/both', logprobs: true, stream: true, ...prefer }))
    const choices = events.slice(0, -1).flatMap((event) => event.data.choices)
    expect(choices.filter((choice: { delta: { content?: string } }) => choice.delta.content)).toEqual([
      { index: 0, delta: { content: '1' }, logprobs: { content: [TOKENS[0]], refusal: null }, finish_reason: null },
      { index: 0, delta: { content: ',' }, logprobs: { content: [TOKENS[1]], refusal: null }, finish_reason: null },
    ])
    expect(t.upstreams.groq!.requests[1]!.json).toMatchObject({ logprobs: true, stream: true })
    expect(t.upstreams.groq!.requests[1]!.json).not.toHaveProperty('top_logprobs')
  })

  it('keeps logprobs null when they were not asked for, and refuses them where no endpoint returns them', async () => {
    const t = await start()
    t.upstreams.groq!.setHandler(() => chatCompletion({ logprobs: { content: TOKENS } }))
    const body = await (await chat({ model: 'acme/both', provider: { order: ['groq'] } })).json()
    expect(body.choices[0].logprobs).toBeNull()
    expect(t.upstreams.groq!.requests[0]!.json).not.toHaveProperty('logprobs')

    for (const model of ['acme/claude', 'acme/gemini']) {
      const response = await chat({ model, logprobs: true })
      expect(response.status).toBe(400)
      expect(await response.json()).toEqual({ error: { code: 400, message: `body.logprobs: not supported by any endpoint of ${model}` } })
    }
  })

  it('come with a positive top_logprobs on /responses: on the output_text parts, from a Chat Completions upstream too', async () => {
    const t = await start()
    t.upstreams.groq!.setHandler(() => chatCompletion({ message: { role: 'assistant', content: '1,' }, logprobs: { content: TOKENS, refusal: null } }))
    const response = await t.post({ model: 'acme/both', input: 'Count', top_logprobs: 2, provider: { order: ['groq'] } })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body.top_logprobs).toBe(2)
    expect(body.output[0].content[0]).toMatchObject({ type: 'output_text', text: '1,', logprobs: TOKENS })
    expect(t.upstreams.groq!.requests[0]!.json).toMatchObject({ logprobs: true, top_logprobs: 2 })

    t.upstreams.openai!.setHandler(() =>
      json({
        id: 'resp_1',
        object: 'response',
        status: 'completed',
        output: [{ id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: '1,', annotations: [], logprobs: TOKENS }] }],
        usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
      }),
    )
    const fromOpenAI = await (await t.post({ model: 'acme/gpt', input: 'Count', top_logprobs: 2 })).json()
    expect(fromOpenAI.output[0].content[0].logprobs).toEqual(TOKENS)
    // OpenAI returns them only when `include` asks, which the spec's `include` cannot: the gateway adds it.
    expect(t.upstreams.openai!.requests[0]!.json).toMatchObject({ include: ['message.output_text.logprobs'], top_logprobs: 2 })
  })

  it('are refused on /responses where no endpoint returns them, naming top_logprobs; 0 asks for nothing', async () => {
    const t = await start()
    const refused = await t.post({ model: 'acme/claude', input: 'Count', top_logprobs: 3 })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toEqual({ error: { code: 400, message: 'body.top_logprobs: not supported by any endpoint of acme/claude' } })
    expect(t.upstreams.anthropic!.requests).toHaveLength(0)

    t.upstreams.anthropic!.setHandler(() =>
      json({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: '1,' }], stop_reason: 'end_turn', usage: { input_tokens: 5, output_tokens: 2 } }),
    )
    expect((await t.post({ model: 'acme/claude', input: 'Count', top_logprobs: 0 })).status).toBe(200)
  })
})
