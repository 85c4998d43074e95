/**
 * The router models: `service/auto`, `service/auto-beta`, `service/switchyard` and `service/pareto-code` choose
 * concrete models from the catalog the gateway can reach, the chosen one answers, and `service_metadata` tells
 * how. A scripted upstream serves a small catalog whose prices place one model in each cost tier.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type ScriptedProvider, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import type { ModelEntry } from '../../../src/engine/models'
import { assertValidEventSequence } from '../../helpers/stream-events'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const METADATA = { headers: { 'x-service-metadata': 'enabled' } }

interface EntryOptions {
  prompt: number
  completion: number
  context?: number
  images?: boolean
  parameters?: string[]
  provider?: string
}

const entry = (slug: string, options: EntryOptions): ModelEntry => ({
  slug,
  name: slug,
  inputModalities: options.images ? ['text', 'image'] : ['text'],
  endpoints: [
    {
      provider: options.provider ?? 'lab',
      model: slug,
      contextLength: options.context ?? 128_000,
      pricing: { prompt: options.prompt / 1e6, completion: options.completion / 1e6 },
      supportedParameters: options.parameters ?? ['tools', 'tool_choice', 'max_output_tokens'],
    },
  ],
})

// Prices per million tokens: cheapest to dearest, so the five land at percentiles 0, 25, 50, 75 and 100.
const CATALOG: ModelEntry[] = [
  entry('lab/nano', { prompt: 0.1, completion: 0.4, context: 16_000 }),
  entry('lab/mini', { prompt: 0.4, completion: 1.6, images: true }),
  entry('lab/coder', { prompt: 1, completion: 4, parameters: ['tools', 'reasoning'] }),
  entry('lab/thinker', { prompt: 2, completion: 8, context: 200_000, parameters: ['reasoning'] }),
  entry('lab/big', { prompt: 5, completion: 20, context: 1_000_000, images: true, parameters: ['tools', 'reasoning'] }),
  // The kit's own test model, moved to a provider without a key: unreachable, so never a candidate.
  entry('test/model', { prompt: 1, completion: 1, provider: 'openai' }),
]

const CODING_SCORES = { 'lab/coder': 0.9, 'lab/thinker': 0.8, 'lab/mini': 0.5, 'lab/big': 0.95 }

const serve = async (options: TestGatewayOptions = {}): Promise<ScriptedProvider> => {
  const lab = scriptedProvider({ reply: (call) => `answer from ${call.model}` })
  testGateway = await createTestGateway({ providers: { lab }, models: CATALOG, routers: { codingScores: CODING_SCORES }, ...options })
  return lab
}

const whole = async (body: Record<string, unknown>) => {
  const response = await testGateway!.responses({ input: 'Hello there', ...body }, METADATA)
  const json = await response.json()
  expect(response.status, JSON.stringify(json)).toBe(200)
  return json
}

const refusal = async (body: Record<string, unknown>, status: number) => {
  const response = await testGateway!.responses({ input: 'Hello there', ...body })
  expect(response.status).toBe(status)
  return (await response.json()).error
}

const routerStage = (json: { service_metadata: { pipeline: Array<Record<string, any>> } }) => json.service_metadata.pipeline.find((stage) => stage.type === 'router')!

describe('service/auto', () => {
  it('routes a chat to the medium cost tier by default and reports the router stage', async () => {
    const lab = await serve()
    const json = await whole({ model: 'service/auto' })
    expect(json.model).toBe('lab/mini')
    expect(json.output[0].content[0].text).toBe('answer from lab/mini')
    expect(lab.calls.map((call) => call.model)).toEqual(['lab/mini'])
    expect(json.service_metadata).toMatchObject({ strategy: 'auto', requested: 'service/auto' })
    expect(routerStage(json)).toEqual({
      type: 'router',
      name: 'auto-router',
      summary: 'chat task routed to lab/mini (cost tier medium)',
      // Nearest the band next: coder (percentile 50) before nano (0).
      data: { task_type: 'chat', cost_tier: 'medium', model: 'lab/mini', models: ['lab/mini', 'lab/coder', 'lab/nano'] },
    })
    // The chosen models are the request's endpoints, primary first.
    expect(json.service_metadata.endpoints.available.map((endpoint: { model: string }) => endpoint.model)).toEqual(['lab/mini', 'lab/coder', 'lab/nano'])
  })

  it.each([
    ['low', 'lab/nano'],
    ['medium', 'lab/mini'],
    ['high', 'lab/coder'],
    ['xhigh', 'lab/thinker'],
    ['max', 'lab/big'],
  ])('cost_tier %s picks the model of that price band', async (tier, model) => {
    await serve()
    const json = await whole({ model: 'service/auto', plugins: [{ id: 'auto-router', cost_tier: tier }] })
    expect(json.model).toBe(model)
    expect(routerStage(json).data).toMatchObject({ cost_tier: tier, model })
  })

  it.each([
    ['code', { input: 'Why does this throw?\n```js\nconst x = undefined.y\n```' }],
    ['code', { input: 'Traceback (most recent call last):\n  File "main.py", line 1' }],
    ['math', { input: 'Solve for x: 3x + 4 = 19' }],
    ['math', { input: 'Evaluate \\int_0^1 x^2 dx' }],
    ['reasoning', { input: 'Walk me through it step by step' }],
    ['reasoning', { input: 'Which plan is better?', reasoning: { effort: 'high' } }],
    ['tool_use', { input: 'What is the weather?', tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' } }] }],
    ['vision', { input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' }] }] }],
    ['chat', { input: 'Tell me about your day' }],
  ])('classifies %s from the input', async (taskType, body) => {
    await serve()
    const json = await whole({ model: 'service/auto', ...body })
    expect(routerStage(json).data.task_type).toBe(taskType)
  })

  it('routes long contexts only to models whose context holds the prompt', async () => {
    await serve()
    // About 70 000 tokens by the estimate: too long for nano's 16k context.
    const json = await whole({ model: 'service/auto', input: 'word '.repeat(42_000), plugins: [{ id: 'auto-router', cost_tier: 'low' }] })
    expect(routerStage(json).data).toMatchObject({ task_type: 'long_context' })
    // nano cannot hold it, so the cheapest band is now mini's.
    expect(json.model).toBe('lab/mini')
  })

  it('sends images only to models that read them, and tools only to endpoints that take them', async () => {
    await serve()
    const image = { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' }] }] }
    const vision = await whole({ model: 'service/auto', ...image, plugins: [{ id: 'auto-router', cost_tier: 'xhigh' }] })
    // Only mini and big read images: big (percentile 100) is nearer the xhigh band than mini (0).
    expect(routerStage(vision).data.models).toEqual(['lab/big', 'lab/mini'])
    const tools = await whole({ model: 'service/auto', tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }], plugins: [{ id: 'auto-router', cost_tier: 'xhigh' }] })
    // thinker takes no tools: the four others remain, and xhigh is big's and coder's side.
    expect(routerStage(tools).data.models).not.toContain('lab/thinker')
  })

  it('keeps to allowed_models, and excluded_models wins over them', async () => {
    await serve()
    const allowed = await whole({ model: 'service/auto', plugins: [{ id: 'auto-router', allowed_models: ['lab/t*', 'LAB/BIG'] }] })
    expect(routerStage(allowed).data.models).toEqual(['lab/thinker', 'lab/big'])
    const excluded = await whole({ model: 'service/auto', plugins: [{ id: 'auto-router', allowed_models: ['lab/*'], excluded_models: ['*/mini', 'lab/n*o'] }] })
    expect(routerStage(excluded).data.models).not.toContain('lab/mini')
    expect(routerStage(excluded).data.models).not.toContain('lab/nano')
  })

  it('answers 404 when no reachable model passes the filters', async () => {
    await serve()
    const error = await refusal({ model: 'service/auto', plugins: [{ id: 'auto-router', allowed_models: ['other/*'] }] }, 404)
    expect(error).toEqual({
      code: 404,
      message: 'No model available to service/auto for this request: no reachable model passes allowed_models and excluded_models and reads this input (images, tools, context length)',
      metadata: { error_type: 'not_found' },
    })
  })

  it('never routes to a model the gateway cannot reach', async () => {
    // The built-in catalog's models have no keys here: only the lab's are candidates.
    await serve()
    const json = await whole({ model: 'service/auto', plugins: [{ id: 'auto-router', cost_tier: 'max' }] })
    expect(json.model).toBe('lab/big')
  })

  it('pin_model keeps the model of the last assistant message', async () => {
    await serve()
    const input = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello', model: 'lab/thinker' },
      { role: 'user', content: 'And now?' },
    ]
    const json = await whole({ model: 'service/auto', input, plugins: [{ id: 'auto-router', pin_model: true }] })
    expect(json.model).toBe('lab/thinker')
    expect(routerStage(json).data).toMatchObject({ is_pinned: true, model: 'lab/thinker' })
    // Without pin_model the router chooses afresh.
    const unpinned = await whole({ model: 'service/auto', input })
    expect(unpinned.model).toBe('lab/mini')
  })

  it('sticks to a session’s first choice while that model can serve, per session_id', async () => {
    await serve()
    const first = await whole({ model: 'service/auto', session_id: 'conversation-1', plugins: [{ id: 'auto-router', cost_tier: 'max' }] })
    expect(first.model).toBe('lab/big')
    // The same session with another tier keeps its model; another session does not.
    const again = await whole({ model: 'service/auto', session_id: 'conversation-1', plugins: [{ id: 'auto-router', cost_tier: 'low' }] })
    expect(again.model).toBe('lab/big')
    expect(routerStage(again).data).toMatchObject({ is_sticky: true })
    const other = await whole({ model: 'service/auto', session_id: 'conversation-2', plugins: [{ id: 'auto-router', cost_tier: 'low' }] })
    expect(other.model).toBe('lab/nano')
    // The x-session-id header names a session as well.
    const response = await testGateway!.responses({ model: 'service/auto', input: 'Hi', plugins: [{ id: 'auto-router', cost_tier: 'low' }] }, { headers: { 'x-session-id': 'conversation-1' } })
    expect((await response.json()).model).toBe('lab/big')
    // A sticky model that cannot read this request (no images) is routed afresh.
    const vision = await whole({
      model: 'service/auto',
      session_id: 'conversation-2',
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' }] }],
    })
    expect(vision.model).toBe('lab/mini')
  })

  it('remembers no session with routers.stickySessions 0, and refuses bad router options', async () => {
    await serve({ routers: { stickySessions: 0 } })
    await whole({ model: 'service/auto', session_id: 's', plugins: [{ id: 'auto-router', cost_tier: 'max' }] })
    expect((await whole({ model: 'service/auto', session_id: 's', plugins: [{ id: 'auto-router', cost_tier: 'low' }] })).model).toBe('lab/nano')
    await expect(createTestGateway({ routers: { codingScores: { 'lab/coder': 1.5 } } })).rejects.toThrow(/options\.routers\.codingScores/)
    await expect(createTestGateway({ routers: { stickySessions: -1 } })).rejects.toThrow(/options\.routers\.stickySessions/)
  })

  it('falls back to the next chosen model when the primary fails, and to the caller’s models after them', async () => {
    const lab = scriptedProvider({ replies: [[{ type: 'http_error', status: 503 }]], reply: (call) => `answer from ${call.model}` })
    testGateway = await createTestGateway({ providers: { lab }, models: CATALOG, retry: { maxAttempts: 5 } })
    const json = await whole({ model: 'service/auto', models: ['service/auto', 'lab/big'] })
    expect(lab.calls.map((call) => call.model)).toEqual(['lab/mini', 'lab/coder'])
    expect(json.model).toBe('lab/coder')
    expect(json.service_metadata.endpoints.available.map((endpoint: { model: string }) => endpoint.model)).toEqual(['lab/mini', 'lab/coder', 'lab/nano', 'lab/big'])
    expect(json.service_metadata.strategy).toBe('auto')
  })

  it('streams the chosen model’s answer', async () => {
    await serve()
    const events = await readEvents(await testGateway!.responses({ model: 'service/auto', input: 'Hi', stream: true }, METADATA))
    assertValidEventSequence(events)
    const completed = events.at(-1)!.response as Record<string, any>
    expect(completed.model).toBe('lab/mini')
    expect(completed.service_metadata.pipeline[0].data.task_type).toBe('chat')
  })
})

describe('router models on the other inference routes', () => {
  it('routes a Chat Completions request for service/auto, which names the chosen model', async () => {
    await serve()
    const response = await testGateway!.call('POST', '/chat/completions', { key: testGateway!.regularKey, json: { model: 'service/auto', messages: [{ role: 'user', content: 'Hi' }] } })
    const json = await response.json()
    expect(response.status, JSON.stringify(json)).toBe(200)
    expect(json.model).toBe('lab/mini')
    expect(json.choices[0].message.content).toBe('answer from lab/mini')
  })
})

describe('service/auto-beta and service/switchyard', () => {
  it('auto-beta reads only its own plugin', async () => {
    await serve()
    const json = await whole({ model: 'service/auto-beta', plugins: [{ id: 'auto-beta-router', cost_tier: 'low' }] })
    expect(json.model).toBe('lab/nano')
    expect(routerStage(json).name).toBe('auto-beta-router')
    expect(await refusal({ model: 'service/auto-beta', plugins: [{ id: 'auto-router', cost_tier: 'low' }] }, 400)).toEqual({
      code: 400,
      message: 'body.plugins.0: the "auto-router" plugin configures the model "service/auto"; set model to "service/auto" or leave the plugin out',
    })
    // auto-beta has no pin_model, as OpenRouter's schema has none.
    const pin = await refusal({ model: 'service/auto-beta', plugins: [{ id: 'auto-beta-router', pin_model: true }] }, 400)
    expect(pin.message).toMatch(/^body\.plugins\.0/)
  })

  it('switchyard routes as the auto-router does', async () => {
    await serve()
    const json = await whole({ model: 'service/switchyard', plugins: [{ id: 'switchyard-router' }] })
    expect(json.model).toBe('lab/mini')
    expect(routerStage(json)).toMatchObject({ name: 'switchyard-router', data: { task_type: 'chat' } })
    expect(json.service_metadata.strategy).toBe('auto')
    const extra = await refusal({ model: 'service/switchyard', plugins: [{ id: 'switchyard-router', algorithm: 'random' }] }, 400)
    expect(extra.message).toMatch(/^body\.plugins\.0/)
  })
})

describe('router plugins that would have no effect', () => {
  it('refuses a router plugin on a request for another model, a plugin named twice and a router among fallbacks', async () => {
    await serve()
    expect((await refusal({ model: 'lab/mini', plugins: [{ id: 'auto-router' }] }, 400)).message).toBe(
      'body.plugins.0: the "auto-router" plugin configures the model "service/auto"; set model to "service/auto" or leave the plugin out',
    )
    expect((await refusal({ model: 'service/auto', plugins: [{ id: 'auto-router' }, { id: 'auto-router' }] }, 400)).message).toBe(
      'body.plugins.1: the "auto-router" plugin is listed more than once',
    )
    expect((await refusal({ model: 'lab/mini', models: ['service/auto'] }, 400)).message).toBe('body.models.0: "service/auto" is a router; name it in model, not among the fallbacks')
    // Disabled, it asks for nothing.
    expect((await whole({ model: 'lab/mini', plugins: [{ id: 'auto-router', enabled: false }] })).model).toBe('lab/mini')
  })

  it('enforces the pattern limits and the cost tiers', async () => {
    await serve()
    expect((await refusal({ model: 'service/auto', plugins: [{ id: 'auto-router', cost_tier: 'cheap' }] }, 400)).message).toBe(
      'body.plugins.0.cost_tier: must be one of low, medium, high, xhigh, max',
    )
    expect((await refusal({ model: 'service/auto', plugins: [{ id: 'auto-router', allowed_models: Array(1025).fill('a/*') }] }, 400)).message).toBe(
      'body.plugins.0.allowed_models: at most 1024 patterns',
    )
    expect((await refusal({ model: 'service/auto', plugins: [{ id: 'auto-router', excluded_models: ['x'.repeat(1025)] }] }, 400)).message).toBe(
      'body.plugins.0.excluded_models.0: patterns must be at most 1024 characters',
    )
    expect((await refusal({ model: 'service/auto', plugins: [{ id: 'auto-router', allowed_models: Array(65).fill('y'.repeat(1024)) }] }, 400)).message).toBe(
      'body.plugins.0.allowed_models: at most 65536 characters of patterns in total',
    )
  })
})

describe('service/pareto-code', () => {
  it('picks the cheapest model meeting min_coding_score', async () => {
    await serve()
    const json = await whole({ model: 'service/pareto-code', plugins: [{ id: 'pareto-router', min_coding_score: 0.75 }] })
    // coder (0.9, $1) is cheaper than thinker (0.8, $2) and big (0.95, $5); mini (0.5) falls short.
    expect(json.model).toBe('lab/coder')
    expect(json.service_metadata.strategy).toBe('pareto')
    expect(routerStage(json)).toMatchObject({
      name: 'pareto-router',
      data: { model: 'lab/coder', models: ['lab/coder', 'lab/thinker', 'lab/big'], coding_score: 0.9, min_coding_score: 0.75, price_source: 'prompt' },
    })
  })

  it('keeps under max_price, by input price or by the weighted average', async () => {
    await serve()
    const byPrompt = await whole({ model: 'service/pareto-code', plugins: [{ id: 'pareto-router', min_coding_score: 0.92, max_price: 5 }] })
    expect(byPrompt.model).toBe('lab/big')
    // Blended 3:1, big costs (3 × 5 + 20) / 4 = 8.75 per million: over a cap of 8.
    const error = await refusal({ model: 'service/pareto-code', plugins: [{ id: 'pareto-router', min_coding_score: 0.92, max_price: 8, price_source: 'weighted_avg' }] }, 404)
    expect(error).toEqual({
      code: 404,
      message: 'No model available to service/pareto-code for this request: no reachable model has a coding score of at least 0.92 at most $8 per million tokens (weighted average)',
      metadata: { error_type: 'not_found' },
    })
  })

  it('defaults to the strong tier (0.7) and never chooses an unscored model', async () => {
    await serve()
    const json = await whole({ model: 'service/pareto-code' })
    expect(routerStage(json).data).toMatchObject({ min_coding_score: 0.7, models: ['lab/coder', 'lab/thinker', 'lab/big'] })
    const low = await whole({ model: 'service/pareto-code', plugins: [{ id: 'pareto-router', min_coding_score: 0 }] })
    // nano has no score: mini is the cheapest scored model.
    expect(low.model).toBe('lab/mini')
  })

  it('validates its fields', async () => {
    await serve()
    expect((await refusal({ model: 'service/pareto-code', plugins: [{ id: 'pareto-router', min_coding_score: 1.5 }] }, 400)).message).toBe('body.plugins.0.min_coding_score: must be at most 1')
    expect((await refusal({ model: 'service/pareto-code', plugins: [{ id: 'pareto-router', price_source: 'completion' }] }, 400)).message).toBe(
      'body.plugins.0.price_source: must be one of prompt, weighted_avg',
    )
  })
})
