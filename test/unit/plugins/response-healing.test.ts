/**
 * The response-healing plugin against a scripted model: what the client gets for each kind of almost-JSON the model
 * writes, the pipeline stage that says what was healed, the JSON schema check, and a streamed request (skipped,
 * and said so).
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, readEvents, scriptedProvider, type TestGateway } from '../../../src/testing'
import { REPAIR_MAX_CHARACTERS } from '../../../src/features/plugins/json-healing'

let testGateway: TestGateway | undefined
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
})

const serve = async (reply: string) => {
  const model = scriptedProvider({ reply })
  testGateway = await createTestGateway({ providers: { scripted: model } })
  return model
}

const METADATA = { headers: { 'x-service-metadata': 'enabled' } }
const HEALING = [{ id: 'response-healing' }]
const JSON_OBJECT = { format: { type: 'json_object' } }
const PERSON_SCHEMA = {
  format: {
    type: 'json_schema',
    name: 'person',
    schema: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name', 'age'], additionalProperties: false },
  },
}

const healed = async (body: Record<string, unknown>) => {
  const response = await testGateway!.responses({ input: 'Who?', plugins: HEALING, text: JSON_OBJECT, ...body }, METADATA)
  const json = await response.json()
  expect(response.status, JSON.stringify(json)).toBe(200)
  return { text: json.output[0].content[0].text as string, stage: json.service_metadata.pipeline[0], pipeline: json.service_metadata.pipeline }
}

describe('response-healing on a whole answer', () => {
  it.each([
    ['a markdown fence', '```json\n{"name": "Bob", "age": 3}\n```', '{"name": "Bob", "age": 3}', ['markdown_fence']],
    ['leading and trailing prose', 'Here is the data you asked for:\n{"name": "Bob", "age": 3}\nAnything else?', '{"name": "Bob", "age": 3}', ['surrounding_text']],
    ['a missing closing bracket', '{"name": "Bob", "age": 3', '{"name": "Bob", "age": 3}', ['syntax']],
    ['a trailing comma and unquoted keys', '{name: "Bob", age: 3,}', '{"name": "Bob", "age": 3}', ['syntax']],
    ['a fence around prose around broken JSON', 'Sure!\n```json\nResult: {\'name\': \'Bob\', "age": 3,}\n```', '{"name": "Bob", "age": 3}', ['markdown_fence', 'surrounding_text', 'syntax']],
  ])('heals %s and says so in the pipeline stage', async (_, reply, expected, repairs) => {
    await serve(reply)
    const { text, stage } = await healed({})
    expect(JSON.parse(text)).toEqual(JSON.parse(expected))
    expect(stage.type).toBe('plugin')
    expect(stage.name).toBe('response-healing')
    expect(stage.summary).toBe(`healed (${repairs.join(', ')})`)
    expect(stage.data).toEqual({ healed: true, repairs })
  })

  it('leaves valid JSON as it came, and reports that nothing needed healing', async () => {
    await serve('{"name":"Bob","age":3}')
    const { text, stage } = await healed({})
    expect(text).toBe('{"name":"Bob","age":3}')
    expect(stage).toEqual({ type: 'plugin', name: 'response-healing', summary: 'already valid JSON', data: { healed: false, repairs: [] } })
  })

  it('keeps an answer it cannot heal as it came, and says why', async () => {
    await serve('I cannot answer that.')
    const { text, stage } = await healed({})
    expect(text).toBe('I cannot answer that.')
    expect(stage).toEqual({
      type: 'plugin',
      name: 'response-healing',
      summary: 'the answer could not be healed: no JSON object or array in the text',
      data: { healed: false, repairs: [], error: 'no JSON object or array in the text' },
    })
  })

  it('checks the healed value against a json_schema and reports what does not match', async () => {
    await serve('```json\n{"name": "Bob", "age": "three"}\n```')
    const { text, stage } = await healed({ text: PERSON_SCHEMA })
    expect(text).toBe('{"name": "Bob", "age": "three"}')
    expect(stage.summary).toBe('healed (markdown_fence), but it does not match the schema')
    expect(stage.data).toEqual({ healed: true, repairs: ['markdown_fence'], schema_valid: false, schema_errors: ['/age must be integer'] })
  })

  it('reports a healed value that matches its json_schema', async () => {
    await serve('{"name": "Bob", "age": 3,}')
    const { stage } = await healed({ text: PERSON_SCHEMA })
    expect(stage.data).toEqual({ healed: true, repairs: ['syntax'], schema_valid: true })
  })

  it('runs a schema\'s pattern on RE2: a pattern that backtracks catastrophically in JavaScript is checked in one pass', async () => {
    // With JavaScript's engine, (a+)+$ on 40 "a" and a "!" takes longer than anyone would wait.
    await serve(`{"code":"${'a'.repeat(40)}!"}`)
    const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } }, required: ['code'] }
    const { stage } = await healed({ text: { format: { type: 'json_schema', name: 'code', schema } } })
    expect(stage.data).toEqual({ healed: false, repairs: [], schema_valid: false, schema_errors: ['/code must match pattern "^(a+)+$"'] })
  })

  it('leaves an answer longer than the repair limit as it came, and says why', async () => {
    await serve(`{"items": [${'1,'.repeat(REPAIR_MAX_CHARACTERS / 2)}`)
    const { stage } = await healed({})
    expect(stage.summary).toBe(`the answer could not be healed: the JSON is longer than the ${REPAIR_MAX_CHARACTERS} characters response-healing repairs`)
  })

  it('heals a Chat Completions answer asked for with response_format', async () => {
    await serve('Here you go: {"name": "Bob", "age": 3}')
    const response = await testGateway!.call('POST', '/chat/completions', {
      key: testGateway!.regularKey,
      json: { messages: [{ role: 'user', content: 'Who?' }], response_format: { type: 'json_object' }, plugins: HEALING },
      ...METADATA,
    })
    const json = await response.json()
    expect(response.status, JSON.stringify(json)).toBe(200)
    expect(json.choices[0].message.content).toBe('{"name": "Bob", "age": 3}')
    expect(json.service_metadata.pipeline).toEqual([{ type: 'plugin', name: 'response-healing', summary: 'healed (surrounding_text)', data: { healed: true, repairs: ['surrounding_text'] } }])
  })

  it('does nothing when disabled', async () => {
    await serve('```json\n{"a": 1}\n```')
    const response = await testGateway!.responses({ input: 'x', text: JSON_OBJECT, plugins: [{ id: 'response-healing', enabled: false }] }, METADATA)
    const json = await response.json()
    expect(json.output[0].content[0].text).toBe('```json\n{"a": 1}\n```')
    expect(json.service_metadata.pipeline).toEqual([])
  })
})

describe('response-healing refusals and streams', () => {
  it('refuses a request that asks for no JSON, before any upstream call', async () => {
    const model = await serve('{}')
    const response = await testGateway!.responses({ input: 'x', plugins: [{ id: 'moderation', enabled: false }, { id: 'response-healing' }] })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({
      error: { code: 400, message: 'body.plugins.1: response-healing needs a JSON answer: set text.format (response_format on /chat/completions) to json_object or json_schema' },
    })
    expect(model.calls).toHaveLength(0)
  })

  it('refuses a json_schema Ajv cannot compile, naming the schema', async () => {
    const model = await serve('{}')
    const response = await testGateway!.responses({ input: 'x', plugins: HEALING, text: { format: { type: 'json_schema', name: 'bad', schema: { type: 'object', required: 'name' } } } })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toMatch(/^body\.text\.format\.schema: not a JSON Schema response-healing can check \(.*required.*\)$/)
    expect(model.calls).toHaveLength(0)
  })

  it('streams the answer as written and reports the stage as skipped', async () => {
    await serve('```json\n{"a": 1}\n```')
    const events = await readEvents(await testGateway!.responses({ input: 'x', text: JSON_OBJECT, plugins: HEALING, stream: true }, METADATA))
    const completed = events.at(-1)!.response
    expect(completed.output[0].content[0].text).toBe('```json\n{"a": 1}\n```')
    expect(completed.service_metadata.pipeline).toEqual([
      { type: 'plugin', name: 'response-healing', summary: 'skipped: a streamed answer is sent as the model writes it and cannot be healed', data: { healed: false, skipped: 'streaming' } },
    ])
  })
})
