/**
 * Checks written from the Open Responses specification (the open Responses API schema) for what `/responses`
 * sends: the Response object and each streaming event. Our own reading of the spec, not its files: every key the
 * spec requires is there with its type; fields the spec does not list may be added (the gateway's own, such as
 * `error_type` or `service_metadata`). Event types outside the spec's list are the gateway's documented
 * extensions (docs/decisions.md, Open Responses) and get the envelope check only.
 */

import * as v from 'valibot'
import { expect } from 'vitest'

const integer = v.pipe(v.number(), v.integer())
const nullable = <T extends v.GenericSchema>(schema: T) => v.nullable(schema)

const UsageSchema = v.looseObject({
  input_tokens: integer,
  output_tokens: integer,
  total_tokens: integer,
  input_tokens_details: v.looseObject({ cached_tokens: integer }),
  output_tokens_details: v.looseObject({ reasoning_tokens: integer }),
})

const OutputTextSchema = v.looseObject({ type: v.literal('output_text'), text: v.string(), annotations: v.array(v.unknown()), logprobs: v.array(v.unknown()) })
const RefusalSchema = v.looseObject({ type: v.literal('refusal'), refusal: v.string() })
const TextPartSchema = v.looseObject({ type: v.picklist(['summary_text', 'reasoning_text', 'text', 'input_text']), text: v.string() })
const ContentPartSchema = v.variant('type', [OutputTextSchema, RefusalSchema, TextPartSchema])

const ITEM_STATUS = v.picklist(['in_progress', 'completed', 'incomplete'])

const MessageSchema = v.looseObject({
  type: v.literal('message'),
  id: v.string(),
  status: ITEM_STATUS,
  role: v.picklist(['user', 'assistant', 'system', 'developer']),
  content: v.array(ContentPartSchema),
})
const FunctionCallSchema = v.looseObject({
  type: v.literal('function_call'),
  id: v.string(),
  call_id: v.string(),
  name: v.string(),
  arguments: v.string(),
  status: ITEM_STATUS,
})
const FunctionCallOutputSchema = v.looseObject({
  type: v.literal('function_call_output'),
  id: v.string(),
  call_id: v.string(),
  output: v.union([v.string(), v.array(v.looseObject({ type: v.string() }))]),
  status: ITEM_STATUS,
})
const ReasoningSchema = v.looseObject({
  type: v.literal('reasoning'),
  id: v.string(),
  content: v.optional(v.array(ContentPartSchema)),
  summary: v.array(ContentPartSchema),
  encrypted_content: v.optional(v.string()),
})
const SPEC_ITEM_TYPES = new Set(['message', 'function_call', 'function_call_output', 'reasoning'])
/** The spec's items; the gateway's server-tool items (`web_search_call`, `image_generation_call`, …) are extensions with an id. */
const ItemSchema = v.union([
  v.variant('type', [MessageSchema, FunctionCallSchema, FunctionCallOutputSchema, ReasoningSchema]),
  v.looseObject({ type: v.pipe(v.string(), v.check((type) => !SPEC_ITEM_TYPES.has(type))), id: v.string() }),
])

const FunctionToolSchema = v.looseObject({
  type: v.literal('function'),
  name: v.string(),
  description: v.optional(nullable(v.string())),
  parameters: v.optional(nullable(v.record(v.string(), v.unknown()))),
  strict: nullable(v.boolean()),
})
const ToolSchema = v.union([FunctionToolSchema, v.looseObject({ type: v.pipe(v.string(), v.check((type) => type !== 'function')) })])

export const ResponseResourceSchema = v.looseObject({
  id: v.string(),
  object: v.literal('response'),
  created_at: integer,
  completed_at: nullable(integer),
  status: v.string(),
  incomplete_details: nullable(v.looseObject({ reason: v.string() })),
  model: v.string(),
  previous_response_id: nullable(v.string()),
  instructions: nullable(v.union([v.string(), v.array(v.unknown())])),
  output: v.array(ItemSchema),
  error: nullable(v.looseObject({ code: v.string(), message: v.string() })),
  tools: v.array(ToolSchema),
  tool_choice: v.union([v.picklist(['none', 'auto', 'required']), v.looseObject({ type: v.string() })]),
  truncation: v.picklist(['auto', 'disabled']),
  parallel_tool_calls: v.boolean(),
  text: v.looseObject({ format: v.optional(v.looseObject({ type: v.string() })) }),
  top_p: v.number(),
  presence_penalty: v.number(),
  frequency_penalty: v.number(),
  top_logprobs: integer,
  temperature: v.number(),
  reasoning: nullable(v.looseObject({})),
  user: nullable(v.string()),
  usage: nullable(UsageSchema),
  max_output_tokens: nullable(integer),
  max_tool_calls: nullable(integer),
  store: v.boolean(),
  background: v.boolean(),
  service_tier: v.string(),
  metadata: v.record(v.string(), v.string()),
  safety_identifier: nullable(v.string()),
  prompt_cache_key: nullable(v.string()),
})

const sequenced = <T extends v.ObjectEntries>(type: string, entries: T) =>
  v.looseObject({ type: v.literal(type), sequence_number: integer, ...entries })

const withResponse = (type: string) => sequenced(type, { response: ResponseResourceSchema })
const itemEvent = (type: string) => sequenced(type, { output_index: integer, item: nullable(ItemSchema) })
const partEvent = (type: string) => sequenced(type, { item_id: v.string(), output_index: integer, content_index: integer, part: ContentPartSchema })
const summaryPartEvent = (type: string) => sequenced(type, { item_id: v.string(), output_index: integer, summary_index: integer, part: ContentPartSchema })
const textAt = <T extends v.ObjectEntries>(type: string, entries: T) => sequenced(type, { item_id: v.string(), output_index: integer, content_index: integer, ...entries })
const summaryAt = <T extends v.ObjectEntries>(type: string, entries: T) => sequenced(type, { item_id: v.string(), output_index: integer, summary_index: integer, ...entries })

/** Every streaming event type of the spec, by type. */
const SPEC_EVENTS: Record<string, v.GenericSchema> = {
  'response.created': withResponse('response.created'),
  'response.queued': withResponse('response.queued'),
  'response.in_progress': withResponse('response.in_progress'),
  'response.completed': withResponse('response.completed'),
  'response.failed': withResponse('response.failed'),
  'response.incomplete': withResponse('response.incomplete'),
  'response.output_item.added': itemEvent('response.output_item.added'),
  'response.output_item.done': itemEvent('response.output_item.done'),
  'response.content_part.added': partEvent('response.content_part.added'),
  'response.content_part.done': partEvent('response.content_part.done'),
  'response.reasoning_summary_part.added': summaryPartEvent('response.reasoning_summary_part.added'),
  'response.reasoning_summary_part.done': summaryPartEvent('response.reasoning_summary_part.done'),
  'response.output_text.delta': textAt('response.output_text.delta', { delta: v.string(), logprobs: v.optional(v.array(v.unknown())) }),
  'response.output_text.done': textAt('response.output_text.done', { text: v.string(), logprobs: v.optional(v.array(v.unknown())) }),
  'response.refusal.delta': textAt('response.refusal.delta', { delta: v.string() }),
  'response.refusal.done': textAt('response.refusal.done', { refusal: v.string() }),
  'response.reasoning.delta': textAt('response.reasoning.delta', { delta: v.string() }),
  'response.reasoning.done': textAt('response.reasoning.done', { text: v.string() }),
  'response.reasoning_summary_text.delta': summaryAt('response.reasoning_summary_text.delta', { delta: v.string() }),
  'response.reasoning_summary_text.done': summaryAt('response.reasoning_summary_text.done', { text: v.string() }),
  'response.output_text.annotation.added': textAt('response.output_text.annotation.added', { annotation_index: integer, annotation: nullable(v.looseObject({ type: v.string() })) }),
  'response.function_call_arguments.delta': sequenced('response.function_call_arguments.delta', { item_id: v.string(), output_index: integer, delta: v.string() }),
  'response.function_call_arguments.done': sequenced('response.function_call_arguments.done', { item_id: v.string(), output_index: integer, arguments: v.string() }),
  error: sequenced('error', { error: v.looseObject({ type: v.string(), code: nullable(v.string()), message: v.string(), param: nullable(v.string()) }) }),
}

/**
 * The gateway's events beyond the spec's list (docs/decisions.md, Open Responses): OpenAI's names for reasoning text,
 * which OpenAI's SDK reads, carry the spec's reasoning-text fields; the server-tool progress events and `response.debug`
 * carry the envelope.
 */
const EXTENSION_EVENTS: Record<string, v.GenericSchema> = {
  'response.reasoning_text.delta': textAt('response.reasoning_text.delta', { delta: v.string() }),
  'response.reasoning_text.done': textAt('response.reasoning_text.done', { text: v.string() }),
}
const EXTENSION_EVENT_PREFIXES = ['response.web_search_call.', 'response.image_generation_call.', 'response.fusion_call.', 'response.debug']
const EnvelopeSchema = v.looseObject({ type: v.string(), sequence_number: integer })

const issuesOf = (schema: v.GenericSchema, value: unknown) => {
  const result = v.safeParse(schema, value)
  return result.success ? [] : result.issues.map((issue) => `${v.getDotPath(issue) ?? '(root)'}: ${issue.message}`)
}

/** Fails with every path the spec's Response object does not allow. */
export const expectOpenResponsesObject = (response: unknown, where = 'response') => {
  expect(issuesOf(ResponseResourceSchema, response).join('\n'), where).toBe('')
}

/** Fails on an event the spec's schema for its type refuses, or on a type that is neither the spec's nor a documented extension. */
export const expectOpenResponsesEvent = (event: { type?: unknown }, where = `event ${String(event.type)}`) => {
  const type = String(event.type)
  const schema =
    SPEC_EVENTS[type] ?? EXTENSION_EVENTS[type] ?? (EXTENSION_EVENT_PREFIXES.some((prefix) => type.startsWith(prefix)) ? EnvelopeSchema : undefined)
  expect(schema, `${where}: not an Open Responses event type nor a documented extension`).toBeDefined()
  expect(issuesOf(schema!, event).join('\n'), where).toBe('')
}

/** A whole stream: each event valid, `sequence_number` counting up from 0 without a gap. */
export const expectOpenResponsesStream = (events: ReadonlyArray<{ type?: unknown; sequence_number?: unknown }>) => {
  for (const [position, event] of events.entries()) {
    expectOpenResponsesEvent(event, `event ${position} (${String(event.type)})`)
    expect(event.sequence_number, `event ${position} sequence_number`).toBe(position)
  }
}
