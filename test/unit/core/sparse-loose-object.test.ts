import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { parseInput, sparseLooseObject } from '../../../src/core/validation'
import { ResponsesRequestSchema } from '../../../src/features/request-body'
import { ChatCompletionsRequestSchema } from '../../../src/routes/chat-completions.schemas'

const entriesOf = (schema: typeof ResponsesRequestSchema | typeof ChatCompletionsRequestSchema) => schema.pipe[0].entries

/** What valibot's own looseObject and the sparse one make of `input`: output (with key order) and issues. */
const both = (entries: v.ObjectEntries, input: unknown, config?: v.Config<v.BaseIssue<unknown>>) => {
  const describe = (result: v.SafeParseResult<v.GenericSchema>) => ({
    success: result.success,
    typed: result.typed,
    output: result.output,
    keys: result.output && typeof result.output === 'object' ? Object.keys(result.output) : null,
    issues: result.issues?.map((issue) => ({ message: issue.message, path: v.getDotPath(issue), kind: issue.kind, type: issue.type })),
  })
  return {
    dense: describe(v.safeParse(v.looseObject(entries), input, config)),
    sparse: describe(v.safeParse(sparseLooseObject(entries), input, config)),
  }
}

const RESPONSES_INPUTS: unknown[] = [
  { model: 'openai/gpt-4.1', input: 'Hi', stream: false },
  { input: 'Hi' },
  { model: 'openai/gpt-4.1' },
  {},
  { input: 'Hi', temperature: 3, top_p: -1, store: true, extra: { a: 1 }, zzz: 1, model: 'not a slug' },
  { stream: true, input: [{ role: 'user', content: 'Hi' }], tools: [{ type: 'function', name: 'f', parameters: {} }], service_tier: 'fast' },
  { input: 'Hi', metadata: { a: 'b' }, reasoning: { effort: 'high' }, text: { format: { type: 'text' } }, unknown_field: [1, 2] },
  { input: 'Hi', stream: 'yes', max_output_tokens: 0, include: ['nope'] },
  JSON.parse('{"input":"Hi","__proto__":{"x":1},"constructor":"c","prototype":"p","toString":"s"}'),
  Object.assign(Object.create(null) as object, { input: 'Hi', model: 'openai/gpt-4.1' }),
  [1, 2],
  'text',
  null,
  new Date(0),
]

const CHAT_INPUTS: unknown[] = [
  { model: 'bench/chat-model', messages: [{ role: 'user', content: 'Hi' }], stream: true, stream_options: { include_usage: true } },
  { messages: [] },
  {},
  { model: 'x/y', messages: [{ role: 'user', content: 'Hi' }], temperature: 'hot', extra_body: { a: 1 } },
]

describe('sparseLooseObject', () => {
  it('gives what valibot looseObject gives for Responses request bodies: output, key order and issues', () => {
    for (const input of RESPONSES_INPUTS) {
      for (const config of [undefined, { abortEarly: true }, { abortPipeEarly: true }]) {
        const { dense, sparse } = both(entriesOf(ResponsesRequestSchema), input, config)
        expect(sparse, JSON.stringify(input)).toEqual(dense)
      }
    }
  })

  it('gives what valibot looseObject gives for Chat Completions request bodies', () => {
    for (const input of CHAT_INPUTS) {
      const { dense, sparse } = both(entriesOf(ChatCompletionsRequestSchema), input)
      expect(sparse, JSON.stringify(input)).toEqual(dense)
    }
  })

  it('names a missing required field and fills defaults in the schema order', () => {
    const schema = sparseLooseObject({ a: v.optional(v.string()), b: v.string(), c: v.optional(v.number(), 7), d: v.fallback(v.number(), 1) })

    expect(() => parseInput(schema, { z: 1 }, 'body')).toThrow('body.b: is required')
    const output = parseInput(schema, { z: 1, b: 'x', a: 'y' }, 'body')
    expect(Object.keys(output)).toEqual(['a', 'b', 'c', 'd', 'z'])
    expect(output).toEqual({ a: 'y', b: 'x', c: 7, d: 1, z: 1 })
  })
})
