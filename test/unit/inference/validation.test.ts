/**
 * `POST /responses` request validation (spec: Response request, Errors, Limits; docs/decisions.md, POST /responses):
 * every rule of the request table, at and past each bound. Rejections are 400s naming the field;
 * accepted requests run against a loopback Groq upstream and echo their settings in the result.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LogFields, Logger } from '../../../src/core/logger'
import { PLUGIN_IDS } from '../../../src/features/plugins/schemas'
import { runPluginIds } from '../../../src/features/plugins/registry'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture } from '../../helpers/upstream'

const MODEL = 'meta-llama/llama-3.3-70b-instruct'
const URL = 'http://gateway.test/api/v1/responses'
const MIB = 1024 * 1024

let harness: ResponsesHarness
const logged: Array<{ message: string; fields: LogFields }> = []
const recordingLogger: Logger = {
  debug: (message, fields = {}) => void logged.push({ message, fields }),
  info() {},
  warn() {},
  error() {},
}

beforeAll(async () => {
  // Only Groq has a shared key, so every accepted request is served by this one upstream.
  harness = await createResponsesHarness({ groq: {} }, { logger: recordingLogger })
  harness.upstreams.groq!.setHandler(() => jsonFixture('openai-chat', 'text.json'))
})
afterAll(async () => {
  await harness.close()
})

/** A minimal valid request with `extra` fields merged in. */
const request = (extra: Record<string, unknown> = {}) => ({ model: MODEL, input: 'Say hello', ...extra })

const expectRejected = async (body: unknown, message: string) => {
  const response = await harness.post(body)
  expect(response.status).toBe(400)
  expect(response.headers.get('content-type')).toBe('application/json')
  expect(await response.json()).toEqual({ error: { code: 400, message } })
}

const expectAccepted = async (body: unknown) => {
  const response = await harness.post(body)
  const result = await response.json()
  expect(response.status, JSON.stringify(result)).toBe(200)
  expect(result).toMatchObject({ object: 'response', status: 'completed', model: MODEL })
  return result
}

const postRaw = (body: BodyInit, contentType: string | null) =>
  harness.gateway.fetch(
    new Request(URL, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.key}`, ...(contentType ? { 'content-type': contentType } : {}) },
      body,
    }),
  )

const pairs = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`key${index}`, `value${index}`]))

const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

describe('input', () => {
  it('is required', async () => {
    await expectRejected({ model: MODEL }, 'body.input: is required')
  })

  it('must be a string or an array of items', async () => {
    await expectRejected(request({ input: 42 }), 'body.input: must be a string or an array of input items')
    await expectRejected(request({ input: { role: 'user', content: 'hi' } }), 'body.input: must be a string or an array of input items')
  })

  it('rejects a message with an unknown role, naming the role', async () => {
    await expectRejected(
      request({ input: [{ type: 'message', role: 'robot', content: 'beep' }] }),
      'body.input.0.role: must be one of user, assistant, system, developer',
    )
  })

  it('rejects a function_call without call_id, naming call_id', async () => {
    await expectRejected(
      request({ input: [{ type: 'function_call', name: 'get_weather', arguments: '{}' }] }),
      'body.input.0.call_id: is required',
    )
  })

  it('rejects an item that is not an object', async () => {
    await expectRejected(request({ input: ['hi'] }), 'body.input.0: must be an input item (message, function_call, function_call_output, reasoning, …)')
  })

  it('accepts a string, and a conversation of messages, function calls and their outputs', async () => {
    await expectAccepted(request({ input: 'hi' }))
    await expectAccepted(
      request({
        input: [
          { role: 'developer', content: 'Answer in French.' },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_1', output: '{"celsius":21}' },
        ],
        tools: [WEATHER_TOOL],
      }),
    )
  })
})

describe('metadata (16 pairs, keys ≤ 64 without brackets, values ≤ 512)', () => {
  it('accepts 16 pairs, a 64-character key and a 512-character value, and echoes them', async () => {
    expect((await expectAccepted(request({ metadata: pairs(16) }))).metadata).toEqual(pairs(16))
    const edge = { ['k'.repeat(64)]: 'v'.repeat(512) }
    expect((await expectAccepted(request({ metadata: edge }))).metadata).toEqual(edge)
    expect((await expectAccepted(request({ metadata: null }))).metadata).toEqual({})
  })

  it('rejects 17 pairs', async () => {
    await expectRejected(request({ metadata: pairs(17) }), 'body.metadata: at most 16 pairs')
  })

  it('rejects a 65-character key', async () => {
    const key = 'k'.repeat(65)
    await expectRejected(request({ metadata: { [key]: 'v' } }), `body.metadata.${key}: keys must be at most 64 characters`)
  })

  it('rejects keys with brackets', async () => {
    await expectRejected(request({ metadata: { 'tags[0]': 'v' } }), 'body.metadata.tags[0]: keys must not contain brackets')
    await expectRejected(request({ metadata: { 'a]': 'v' } }), 'body.metadata.a]: keys must not contain brackets')
  })

  it('rejects a 513-character value and a non-string value', async () => {
    await expectRejected(request({ metadata: { team: 'v'.repeat(513) } }), 'body.metadata.team: values must be at most 512 characters')
    await expectRejected(request({ metadata: { team: 7 } }), 'body.metadata.team: expected string')
  })
})

describe('string lengths (256 characters)', () => {
  it.each(['session_id', 'user', 'safety_identifier'])('%s: 256 ok, 257 → 400', async (field) => {
    await expectAccepted(request({ [field]: 's'.repeat(256) }))
    await expectRejected(request({ [field]: 's'.repeat(257) }), `body.${field}: must be at most 256 characters`)
  })

  it('session_id in the body wins over the x-session-id header', async () => {
    const sessionOf = async (body: unknown, headers: Record<string, string>) => {
      logged.length = 0
      expect((await harness.post(body, headers)).status).toBe(200)
      return logged.find((entry) => entry.message === 'response requested')!.fields.sessionId
    }
    expect(await sessionOf(request({ session_id: 'from-body' }), { 'x-session-id': 'from-header' })).toBe('from-body')
    expect(await sessionOf(request(), { 'x-session-id': 'from-header' })).toBe('from-header')
  })
})

describe('server-tool loop limits', () => {
  it('max_tool_calls: 1 and 30 ok, 0 and 31 → 400', async () => {
    expect((await expectAccepted(request({ max_tool_calls: 1 }))).max_tool_calls).toBe(1)
    expect((await expectAccepted(request({ max_tool_calls: 30 }))).max_tool_calls).toBe(30)
    await expectAccepted(request({ max_tool_calls: null }))
    await expectRejected(request({ max_tool_calls: 0 }), 'body.max_tool_calls: must be at least 1')
    await expectRejected(request({ max_tool_calls: 31 }), 'body.max_tool_calls: must be at most 30')
    await expectRejected(request({ max_tool_calls: 2.5 }), 'body.max_tool_calls: must be an integer')
  })

  it('stop_server_tools_when needs at least one condition', async () => {
    await expectRejected(request({ stop_server_tools_when: [] }), 'body.stop_server_tools_when: must have at least 1 condition')
  })

  it.each([
    { type: 'step_count_is', step_count: 3 },
    { type: 'has_tool_call', tool_name: 'get_weather' },
    { type: 'max_tokens_used', max_tokens: 10_000 },
    { type: 'max_cost', max_cost_in_dollars: 0.25 },
    { type: 'finish_reason_is', reason: 'length' },
  ])('stop_server_tools_when accepts $type', async (condition) => {
    await expectAccepted(request({ stop_server_tools_when: [condition] }))
  })

  it('accepts all five kinds together (any firing condition stops the loop)', async () => {
    await expectAccepted(
      request({
        stop_server_tools_when: [
          { type: 'step_count_is', step_count: 3 },
          { type: 'has_tool_call', tool_name: 'get_weather' },
          { type: 'max_tokens_used', max_tokens: 10_000 },
          { type: 'max_cost', max_cost_in_dollars: 0.25 },
          { type: 'finish_reason_is', reason: 'length' },
        ],
      }),
    )
  })

  it('rejects an unknown kind and a condition missing its field', async () => {
    await expectRejected(
      request({ stop_server_tools_when: [{ type: 'wall_clock_is', seconds: 5 }] }),
      'body.stop_server_tools_when.0.type: must be one of step_count_is, has_tool_call, max_tokens_used, max_cost, finish_reason_is',
    )
    await expectRejected(request({ stop_server_tools_when: [{ type: 'step_count_is' }] }), 'body.stop_server_tools_when.0.step_count: is required')
    await expectRejected(request({ stop_server_tools_when: [{ type: 'has_tool_call' }] }), 'body.stop_server_tools_when.0.tool_name: is required')
    await expectRejected(request({ stop_server_tools_when: [{ type: 'max_tokens_used' }] }), 'body.stop_server_tools_when.0.max_tokens: is required')
    await expectRejected(request({ stop_server_tools_when: [{ type: 'max_cost' }] }), 'body.stop_server_tools_when.0.max_cost_in_dollars: is required')
    await expectRejected(request({ stop_server_tools_when: [{ type: 'finish_reason_is' }] }), 'body.stop_server_tools_when.0.reason: is required')
    await expectRejected(request({ stop_server_tools_when: [{ type: 'has_tool_call', tool_name: '' }] }), 'body.stop_server_tools_when.0.tool_name: must not be empty')
  })
})

describe('include', () => {
  it.each([
    'file_search_call.results',
    'message.input_image.image_url',
    'computer_call_output.output.image_url',
    'reasoning.encrypted_content',
    'code_interpreter_call.outputs',
  ])('accepts %s', async (item) => {
    await expectAccepted(request({ include: [item] }))
  })

  it('accepts null and rejects any other item', async () => {
    await expectAccepted(request({ include: null }))
    await expectRejected(
      request({ include: ['output_text.logprobs'] }),
      'body.include.0: must be one of file_search_call.results, message.input_image.image_url, computer_call_output.output.image_url, reasoning.encrypted_content, code_interpreter_call.outputs',
    )
  })
})

describe('service_tier', () => {
  // The answer names the tier the upstream says served it: the recorded fixture's `default`, whatever was asked.
  it.each(['auto', 'default', null])('accepts %s and echoes the tier that served', async (tier) => {
    expect((await expectAccepted(request({ service_tier: tier }))).service_tier).toBe('default')
  })

  // Groq's Chat Completions adapter sends no tier: a tier it would drop is refused, never echoed as used.
  it.each(['fast', 'flex', 'priority', 'scale'])('refuses %s where no endpoint sends a tier', async (tier) => {
    await expectRejected(request({ service_tier: tier }), `body.service_tier ("${tier}"): not supported by any endpoint of ${MODEL}`)
  })

  it('defaults to auto and rejects other values', async () => {
    expect((await expectAccepted(request())).service_tier).toBe('default')
    await expectRejected(
      request({ service_tier: 'turbo' }),
      'body.service_tier: must be one of "auto", "default", "fast", "flex", "priority", "scale"',
    )
  })
})

describe('route (deprecated partition alias)', () => {
  it.each(['fallback', 'sort', null])('accepts %s', async (route) => {
    await expectAccepted(request({ route }))
  })

  it('rejects other values', async () => {
    await expectRejected(request({ route: 'cheapest' }), 'body.route: must be one of "fallback", "sort"')
  })
})

describe('without a response store: previous_response_id, store, background', () => {
  // docs/decisions.md, Stored responses: a gateway without the storedResponses option keeps nothing, and says so.
  it('accepts previous_response_id null and refuses a response id, pointing at input', async () => {
    await expectAccepted(request({ previous_response_id: null }))
    await expectRejected(
      request({ previous_response_id: 'resp_0123' }),
      'body.previous_response_id: this gateway stores no responses (its storedResponses option is off); send the whole conversation in input',
    )
    await expectRejected(request({ previous_response_id: 0 }), 'body.previous_response_id: must be a response id (resp_…)')
  })

  it('accepts store false and refuses store true', async () => {
    expect((await expectAccepted(request({ store: false }))).store).toBe(false)
    await expectRejected(request({ store: true }), 'body.store: this gateway stores no responses (its storedResponses option is off)')
  })

  it('accepts background false or null and rejects background true', async () => {
    await expectAccepted(request({ background: false }))
    await expectAccepted(request({ background: null }))
    await expectRejected(request({ background: true }), 'body.background: this gateway stores no responses (its storedResponses option is off), and a background response is a stored one')
  })
})

describe('sampling settings', () => {
  it('temperature: 0 and 2 ok, -0.1 and 2.1 → 400', async () => {
    expect((await expectAccepted(request({ temperature: 0 }))).temperature).toBe(0)
    expect((await expectAccepted(request({ temperature: 2 }))).temperature).toBe(2)
    await expectRejected(request({ temperature: -0.1 }), 'body.temperature: must be at least 0')
    await expectRejected(request({ temperature: 2.1 }), 'body.temperature: must be at most 2')
  })

  it('top_p: 0 and 1 ok, 1.1 and -0.1 → 400', async () => {
    expect((await expectAccepted(request({ top_p: 0 }))).top_p).toBe(0)
    expect((await expectAccepted(request({ top_p: 1 }))).top_p).toBe(1)
    await expectRejected(request({ top_p: 1.1 }), 'body.top_p: must be at most 1')
    await expectRejected(request({ top_p: -0.1 }), 'body.top_p: must be at least 0')
  })

  it.each(['presence_penalty', 'frequency_penalty'])('%s: -2 and 2 ok, -2.1 and 2.1 → 400', async (field) => {
    expect((await expectAccepted(request({ [field]: -2 })))[field]).toBe(-2)
    expect((await expectAccepted(request({ [field]: 2 })))[field]).toBe(2)
    // Open Responses: the default in force is echoed, never null.
    expect((await expectAccepted(request({ [field]: null })))[field]).toBe(0)
    await expectRejected(request({ [field]: -2.1 }), `body.${field}: must be at least -2`)
    await expectRejected(request({ [field]: 2.1 }), `body.${field}: must be at most 2`)
  })

  it('top_k: 0 and 40 ok, negative or fractional → 400', async () => {
    await expectAccepted(request({ top_k: 0 }))
    await expectAccepted(request({ top_k: 40 }))
    await expectRejected(request({ top_k: -1 }), 'body.top_k: must be at least 0')
    await expectRejected(request({ top_k: 1.5 }), 'body.top_k: must be an integer')
  })

  it('top_logprobs: 0 and 20 ok, 21 → 400', async () => {
    expect((await expectAccepted(request({ top_logprobs: 0 }))).top_logprobs).toBe(0)
    // In range, and then a routing matter: none of this model's endpoints returns log probabilities.
    await expectRejected(request({ top_logprobs: 20 }), `body.top_logprobs: not supported by any endpoint of ${MODEL}`)
    await expectRejected(request({ top_logprobs: 21 }), 'body.top_logprobs: must be at most 20')
  })

  it('max_output_tokens: 1 ok, 0 → 400', async () => {
    expect((await expectAccepted(request({ max_output_tokens: 1 }))).max_output_tokens).toBe(1)
    await expectRejected(request({ max_output_tokens: 0 }), 'body.max_output_tokens: must be at least 1')
    await expectRejected(request({ max_output_tokens: 10.5 }), 'body.max_output_tokens: must be an integer')
  })
})

describe('reasoning', () => {
  it.each(['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none', null])('effort %s is accepted and echoed', async (effort) => {
    expect((await expectAccepted(request({ reasoning: { effort } }))).reasoning).toEqual({ effort })
  })

  it.each(['auto', 'concise', 'detailed', null])('summary %s is accepted and echoed', async (summary) => {
    expect((await expectAccepted(request({ reasoning: { summary } }))).reasoning).toEqual({ summary })
  })

  it('rejects other effort and summary values', async () => {
    await expectRejected(
      request({ reasoning: { effort: 'extreme' } }),
      'body.reasoning.effort: must be one of "max", "xhigh", "high", "medium", "low", "minimal", "none"',
    )
    await expectRejected(
      request({ reasoning: { summary: 'verbose' } }),
      'body.reasoning.summary: must be one of "auto", "concise", "detailed"',
    )
  })
})

describe('text', () => {
  it.each(['low', 'medium', 'high', 'xhigh', 'max', null])('verbosity %s is accepted and echoed', async (verbosity) => {
    expect((await expectAccepted(request({ text: { verbosity } }))).text).toEqual({ verbosity })
  })

  it('rejects another verbosity', async () => {
    await expectRejected(
      request({ text: { verbosity: 'loud' } }),
      'body.text.verbosity: must be one of "low", "medium", "high", "xhigh", "max"',
    )
  })

  it.each([
    { type: 'text' },
    { type: 'json_object' },
    { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: { city: { type: 'string' } } }, strict: true },
  ])('format $type is accepted and echoed', async (format) => {
    expect((await expectAccepted(request({ input: 'Reply in JSON', text: { format } }))).text).toEqual({ format })
  })

  it('rejects json_schema without name or schema, and other format types', async () => {
    await expectRejected(request({ text: { format: { type: 'json_schema', schema: { type: 'object' } } } }), 'body.text.format.name: is required')
    await expectRejected(request({ text: { format: { type: 'json_schema', name: 'answer' } } }), 'body.text.format.schema: is required')
    await expectRejected(
      request({ text: { format: { type: 'json_schema', name: 'has space', schema: {} } } }),
      'body.text.format.name: must be 1 to 64 letters, digits, _ or -',
    )
    await expectRejected(
      request({ text: { format: { type: 'yaml' } } }),
      'body.text.format.type: must be one of "text", "json_object", "json_schema"',
    )
  })
})

describe('tools and tool_choice', () => {
  it.each(['auto', 'none', 'required'])('tool_choice %s is accepted and echoed', async (choice) => {
    expect((await expectAccepted(request({ tools: [WEATHER_TOOL], tool_choice: choice }))).tool_choice).toBe(choice)
  })

  it('tool_choice {type: function, name} is accepted and echoed', async () => {
    const choice = { type: 'function', name: 'get_weather' }
    expect((await expectAccepted(request({ tools: [WEATHER_TOOL], tool_choice: choice }))).tool_choice).toEqual(choice)
  })

  it('rejects another tool_choice', async () => {
    await expectRejected(request({ tool_choice: 'sometimes' }), 'body.tool_choice: must be "auto", "none", "required" or a tool choice object')
  })

  it('rejects a function tool without a valid name, naming the name', async () => {
    await expectRejected(request({ tools: [{ type: 'function', name: 'get weather' }] }), 'body.tools.0.name: must be 1 to 128 letters, digits, _ . : or -')
    await expectRejected(request({ tools: [{ type: 'function', name: 'x'.repeat(129) }] }), 'body.tools.0.name: must be 1 to 128 letters, digits, _ . : or -')
    await expectRejected(request({ tools: [{ type: 'function', description: 'no name' }] }), 'body.tools.0.name: is required')
  })

  it('accepts a 128-character function name and echoes the tools', async () => {
    const tool = { ...WEATHER_TOOL, name: 'x'.repeat(128) }
    // Open Responses: an echoed function tool carries `strict`, null when the caller left it out.
    expect((await expectAccepted(request({ tools: [tool] }))).tools).toEqual([{ strict: null, ...tool }])
  })

  it('rejects a tool that is not an object with a type', async () => {
    await expectRejected(request({ tools: ['get_weather'] }), 'body.tools.0: must be a tool object with a type')
  })
})

describe('provider preferences (strict object)', () => {
  it('rejects an unknown field', async () => {
    await expectRejected(request({ provider: { favourite: 'groq' } }), 'body.provider.favourite: unknown field')
  })

  it('refuses sort exacto, in both forms, naming it: no tool-calling quality figures to route on', async () => {
    const message = 'provider.sort: "exacto" is not supported: the gateway has no tool-calling quality figures to route on'
    await expectRejected(request({ provider: { sort: 'exacto' } }), message)
    await expectRejected(request({ provider: { sort: { by: 'exacto', partition: 'none' } } }), message)
  })

  it.each(['price', 'throughput', 'latency'])('sort %s is accepted, as a string and as {by, partition}', async (by) => {
    await expectAccepted(request({ provider: { sort: by } }))
    await expectAccepted(request({ provider: { sort: { by } } }))
    await expectAccepted(request({ provider: { sort: { by, partition: 'model' } } }))
    await expectAccepted(request({ provider: { sort: { by, partition: 'none' } } }))
  })

  it('rejects another sort or partition', async () => {
    await expectRejected(
      request({ provider: { sort: 'cheapest' } }),
      'body.provider.sort: must be one of "price", "throughput", "latency", "exacto", or object',
    )
    await expectRejected(
      request({ provider: { sort: { by: 'price', partition: 'all' } } }),
      // The object option got furthest: its own rule is named, not the union's.
      'body.provider.sort.partition: must be one of "model", "none"',
    )
  })

  it('max_price takes numbers or decimal strings, not other strings', async () => {
    await expectAccepted(request({ provider: { max_price: { prompt: '1.5', completion: 2 } } }))
    await expectRejected(request({ provider: { max_price: { prompt: 'cheap' } } }), 'body.provider.max_price.prompt: must be a decimal number')
    await expectRejected(request({ provider: { max_price: { prompt: '1e3' } } }), 'body.provider.max_price.prompt: must be a decimal number')
  })

  it('accepts the other documented preferences', async () => {
    await expectAccepted(
      request({
        provider: {
          order: ['groq'],
          only: ['groq'],
          ignore: ['together'],
          allow_fallbacks: true,
          require_parameters: false,
          data_collection: 'allow',
          enforce_distillable_text: false,
          // The catalog says no endpoint's format: `unknown` admits them.
          quantizations: ['fp8', 'bf16', 'unknown'],
          preferred_max_latency: { p50: 2, p90: 5 },
          preferred_min_throughput: 50,
        },
      }),
    )
  })
})

describe('plugins', () => {
  it('runs every plugin id of the spec: none is accepted without effect', () => {
    expect(PLUGIN_IDS.filter((id) => !runPluginIds().includes(id))).toEqual([])
  })

  it('refuses a plugin listed twice', async () => {
    await expectRejected(
      request({ plugins: [{ id: 'response-healing', enabled: false }, { id: 'response-healing' }] }),
      'body.plugins.1: the "response-healing" plugin is listed more than once',
    )
  })

  it.each([
    ['response-healing', { id: 'response-healing', mode: 'strict' }, 'body.plugins.0.mode'],
    ['context-compression', { id: 'context-compression', engine: 'summarize' }, 'body.plugins.0.engine: must be "middle-out"'],
    ['moderation', { id: 'moderation', model: 'omni-moderation-latest' }, 'body.plugins.0.model'],
    ['file-parser', { id: 'file-parser', pdf: { engine: 'tesseract' } }, 'body.plugins.0.pdf.engine: must be one of native, pdf-text, mistral-ocr, cloudflare-ai'],
    ['web', { id: 'web', x_search: {} }, 'body.plugins.0.x_search'],
    ['web-fetch', { id: 'web-fetch', max_uses: 0 }, 'body.plugins.0.max_uses: must be at least 1'],
  ])('%s: refuses a field it does not know or a value out of range', async (_, plugin, message) => {
    const response = await harness.post(request({ plugins: [plugin] }))
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toContain(message)
  })

  it.each([
    ['auto-router', 'service/auto'],
    ['auto-beta-router', 'service/auto-beta'],
    ['pareto-router', 'service/pareto-code'],
    ['switchyard-router', 'service/switchyard'],
  ])('validates %s and refuses it on a request for another model than its router %s (test/unit/inference/routers.test.ts runs it)', async (id, slug) => {
    await expectRejected(
      request({ plugins: [{ id: 'web', enabled: false }, { id }] }),
      `body.plugins.1: the "${id}" plugin configures the model "${slug}"; set model to "${slug}" or leave the plugin out`,
    )
    await expectAccepted(request({ plugins: [{ id, enabled: false }] }))
  })

  it('validates fusion (test/unit/inference/fusion.test.ts runs it); a disabled one is accepted', async () => {
    await expectRejected(request({ plugins: [{ id: 'web', enabled: false }, { id: 'fusion', analysis_models: [] }] }), 'body.plugins.1.analysis_models: must name at least 1 model')
    await expectAccepted(request({ plugins: [{ id: 'fusion', enabled: false }] }))
  })

  it('rejects an unknown id', async () => {
    await expectRejected(
      request({ plugins: [{ id: 'magic' }] }),
      'body.plugins.0.id: must have an id among auto-router, auto-beta-router, moderation, web, web-fetch, file-parser, response-healing, context-compression, pareto-router, fusion, switchyard-router',
    )
  })
})

describe('model, models, modalities, cache_control', () => {
  it('models: 16 ok, 17 → 400', async () => {
    await expectAccepted(request({ models: Array.from({ length: 16 }, () => MODEL) }))
    await expectRejected(request({ models: Array.from({ length: 17 }, () => MODEL) }), 'body.models: at most 16 models')
  })

  it('rejects a model that is not <author>/<name>', async () => {
    await expectRejected(request({ model: 'llama-3.3-70b' }), 'body.model: must be a model slug <author>/<name>')
    await expectRejected(request({ models: ['not a slug'] }), 'body.models.0: must be a model slug <author>/<name>')
  })

  it('modalities: text and image ok, others → 400; image only for a model that draws', async () => {
    await expectAccepted(request({ modalities: ['text'] }))
    await expectAccepted(request({ modalities: [] }))
    await expectRejected(request({ modalities: ['audio'] }), 'body.modalities.0: must be one of "text", "image"')
    await expectRejected(
      request({ modalities: ['text', 'image'] }),
      `modalities: ${MODEL} cannot answer with "image" output; choose a model whose output_modalities include it (GET /models?output_modalities=image lists the image models)`,
    )
  })

  it('image_config: only beside modalities that include image', async () => {
    await expectRejected(request({ image_config: { aspect_ratio: '16:9' } }), 'body: image_config applies only to a request whose modalities include "image"')
    await expectRejected(request({ modalities: ['text'], image_config: { aspect_ratio: '16:9' } }), 'body: image_config applies only to a request whose modalities include "image"')
  })

  it('cache_control: ephemeral ok, other types → 400', async () => {
    await expectAccepted(request({ cache_control: { type: 'ephemeral', ttl: '5m' } }))
    await expectRejected(request({ cache_control: { type: 'persistent' } }), 'body.cache_control.type: must be "ephemeral"')
    await expectRejected(request({ cache_control: {} }), 'body.cache_control.type: is required')
  })
})

describe('echoed settings', () => {
  it('echoes every setting the spec lists in the result', async () => {
    const settings = {
      instructions: 'Be brief.',
      max_output_tokens: 64,
      metadata: { team: 'geo' },
      temperature: 0.5,
      top_p: 0.9,
      presence_penalty: 0.25,
      frequency_penalty: -0.5,
      tool_choice: { type: 'function', name: 'get_weather' },
      tools: [WEATHER_TOOL],
      reasoning: { effort: 'low', summary: 'auto' },
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true }, verbosity: 'low' },
      parallel_tool_calls: false,
      service_tier: 'default',
    }
    const result = await expectAccepted(request(settings))
    expect(result).toMatchObject(settings)
  })

  it('echoes defaults when the settings are omitted', async () => {
    const result = await expectAccepted(request())
    expect(result).toMatchObject({
      instructions: null,
      max_output_tokens: null,
      metadata: {},
      previous_response_id: null,
      temperature: 1,
      top_p: 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      top_logprobs: 0,
      tool_choice: 'auto',
      tools: [],
      reasoning: null,
      text: { format: { type: 'text' } },
      parallel_tool_calls: true,
      // The tier the upstream says served the answer.
      service_tier: 'default',
      store: false,
    })
  })
})

describe('the HTTP body itself', () => {
  it('accepts a body of exactly 20 MiB and rejects one byte more with 413', async () => {
    const json = JSON.stringify(request())
    const atLimit = json + ' '.repeat(20 * MIB - json.length)
    expect(new TextEncoder().encode(atLimit).byteLength).toBe(20 * MIB)
    const accepted = await postRaw(atLimit, 'application/json')
    expect(accepted.status).toBe(200)
    await accepted.body?.cancel()

    const rejected = await postRaw(`${atLimit} `, 'application/json')
    expect(rejected.status).toBe(413)
    expect(await rejected.json()).toEqual({ error: { code: 413, message: 'Request body exceeds the limit of 20971520 bytes' } })
  })

  it('rejects a declared Content-Length over 20 MiB before reading', async () => {
    const response = await harness.gateway.fetch(
      new Request(URL, {
        method: 'POST',
        headers: { authorization: `Bearer ${harness.key}`, 'content-type': 'application/json', 'content-length': String(20 * MIB + 1) },
        body: JSON.stringify(request()),
      }),
    )
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual({ error: { code: 413, message: 'Request body exceeds the limit of 20971520 bytes' } })
  })

  it('rejects a body that is not application/json with 415', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', null]) {
      const response = await postRaw(JSON.stringify(request()), contentType)
      expect(response.status, String(contentType)).toBe(415)
      expect(await response.json()).toEqual({ error: { code: 415, message: 'Content-Type must be application/json' } })
    }
  })

  it('accepts application/json with a charset parameter', async () => {
    const response = await postRaw(JSON.stringify(request()), 'application/json; charset=utf-8')
    expect(response.status).toBe(200)
    await response.body?.cancel()
  })

  it('rejects malformed JSON with 400, saying where, without echoing the body', async () => {
    const truncated = await postRaw('{"model": "meta-llama/llama-3.3-70b-instruct", "input": ', 'application/json')
    expect(truncated.status).toBe(400)
    expect(await truncated.json()).toEqual({
      error: { code: 400, message: 'Malformed JSON in request body: unexpected end of input, expected a value' },
    })
    const broken = await postRaw('{"model": sk-secret-value}', 'application/json')
    expect(broken.status).toBe(400)
    expect(await broken.json()).toEqual({ error: { code: 400, message: 'Malformed JSON in request body at line 1, column 11: expected a value' } })
  })

  it('rejects a JSON body that is not an object', async () => {
    const response = await postRaw('["hi"]', 'application/json')
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ error: { code: 400, message: 'body: must be a JSON object' } })
  })
})

describe(`free-form JSON nests at most ${128} levels (400 naming the field, before any upstream call)`, () => {
  const DEEP = '__deep__'
  /** `{"a":{"a":…{}}}`, `depth` objects deep, as text: `JSON.stringify` itself overflows on 5,000 levels. */
  const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`
  /** The request `body` with `value` spliced in as text where it holds the `DEEP` marker. */
  const postWithDeep = (body: Record<string, unknown>, value: string) =>
    postRaw(JSON.stringify({ model: MODEL, input: 'Say hello', ...body }).replace(`"${DEEP}"`, value), 'application/json')
  const schemaFormat = { format: { type: 'json_schema', name: 'answer', schema: DEEP } }

  const fields: Array<[string, Record<string, unknown>]> = [
    ['body.tools.0.parameters', { tools: [{ type: 'function', name: 'lookup', parameters: DEEP }] }],
    ['body.tools.0.extra', { tools: [{ type: 'web_search', extra: DEEP }] }],
    ['body.text.format.schema', { text: schemaFormat }],
    ['body.input.0.extra', { input: [{ type: 'message', role: 'user', content: 'hi', extra: DEEP }] }],
    ['body.input.0.content.0.extra', { input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi', extra: DEEP }] }] }],
    ['body.input.0.payload', { input: [{ type: 'computer_call_output', payload: DEEP }] }],
    ['body.image_config', { image_config: DEEP }],
    ['body.prompt.variables', { prompt: { id: 'greeting', variables: DEEP } }],
    ['body.tool_choice.tools', { tool_choice: { type: 'allowed_tools', mode: 'auto', tools: DEEP } }],
    ['body.trace', { trace: DEEP }],
  ]

  it.each(fields)('%s: 5,000 levels → 400', async (field, body) => {
    const before = harness.upstreams.groq!.requests.length
    // `tool_choice.tools` and `image_config` hold arrays or records: the deep value goes one level down there.
    const value = field.endsWith('tool_choice.tools') ? `[${nested(4_999)}]` : field === 'body.image_config' ? `{"size":[${nested(4_998)}]}` : nested(5_000)
    const response = await postWithDeep(body, value)
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ error: { code: 400, message: `${field}: must not nest deeper than 128 levels` } })
    expect(harness.upstreams.groq!.requests).toHaveLength(before)
  })

  it('accepts 128 levels and refuses 129, in tool parameters and in a JSON schema', async () => {
    const tools = { tools: [{ type: 'function', name: 'lookup', parameters: DEEP }] }
    for (const body of [tools, { text: schemaFormat }]) {
      const accepted = await postWithDeep(body, nested(128))
      expect(accepted.status, await accepted.clone().text()).toBe(200)
      expect((await postWithDeep(body, nested(129))).status).toBe(400)
    }
    // The upstream got the 128-level value whole.
    const sent = harness.upstreams.groq!.requests.at(-1)!.text
    expect(sent).toContain(nested(128))
  })
})
