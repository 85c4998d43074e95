/**
 * An Anthropic Messages body → the request the engine runs (the validated `/responses` body), field by
 * field as docs/decisions.md (POST /messages) lists them. Nothing is dropped silently: what has no
 * translation was refused by the schema already.
 */

import { InvalidRequestError } from '../../core/errors'
import type { RouteExtensions } from '../../engine/request'
import { isServerToolEntry, type ServerToolEntry } from '../shared/server-tool.schemas'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import { pluginsWithTransforms } from '../shared/transforms'
import type { MessagesRequest } from './schemas'
import { toInputItems } from './content'

type InputItem = Exclude<ResponsesRequestBody['input'], string>[number]
type Reasoning = NonNullable<ResponsesRequestBody['reasoning']>

/**
 * `thinking` (and `output_config.effort`) → the engine's reasoning. A summary is asked for whenever thinking is
 * on, so models that only show summaries (OpenAI's) still return thinking blocks.
 */
const toReasoning = (body: MessagesRequest): Reasoning | undefined => {
  const { thinking } = body
  const effort = body.output_config?.effort ?? undefined
  if (effort && (!thinking || thinking.type === 'disabled')) {
    throw new InvalidRequestError('body.output_config.effort: is supported only with thinking of type "enabled" or "adaptive"')
  }
  if (!thinking) return undefined
  if (thinking.type === 'disabled') return { enabled: false }
  return {
    enabled: true,
    summary: 'auto',
    ...(effort ? { effort } : {}),
    ...(thinking.type === 'enabled' ? { max_tokens: thinking.budget_tokens } : {}),
  }
}

const toToolChoice = (choice: MessagesRequest['tool_choice']): ResponsesRequestBody['tool_choice'] => {
  switch (choice?.type) {
    case undefined:
      return undefined
    case 'auto':
    case 'none':
      return choice.type
    case 'any':
      return 'required'
    case 'tool':
      return { type: 'function', name: choice.name }
  }
}

// The gateway's server tools (`service:*`) pass as they are: the engine runs them in its loop, as on /responses.
const toTools = (tools: MessagesRequest['tools']): ResponsesRequestBody['tools'] =>
  tools?.map((entry) => {
    if (isServerToolEntry(entry)) return entry as ServerToolEntry
    const tool = entry as Exclude<typeof entry, ServerToolEntry>
    return {
      type: 'function' as const,
      name: tool.name,
      ...(tool.description == null ? {} : { description: tool.description }),
      parameters: tool.input_schema,
      ...(tool.strict == null ? {} : { strict: tool.strict }),
      ...(tool.cache_control ? { cache_control: tool.cache_control } : {}),
    }
  })

/** A plain string is the instructions; blocks become a system message first, so their cache breakpoints stay. */
const systemItems = (system: MessagesRequest['system']): { instructions?: string; items: InputItem[] } => {
  if (system == null) return { items: [] }
  if (typeof system === 'string') return system === '' ? { items: [] } : { instructions: system, items: [] }
  if (system.length === 0) return { items: [] }
  const content = system.map((block) => ({ type: 'input_text' as const, text: block.text, ...(block.cache_control ? { cache_control: block.cache_control } : {}) }))
  return { items: [{ type: 'message', role: 'system', content }] }
}

const toTextFormat = (config: MessagesRequest['output_config']): ResponsesRequestBody['text'] =>
  config?.format ? { format: { type: 'json_schema', name: 'output', schema: config.format.schema } } : undefined

/** Copies the fields whose value is set, leaving out `undefined` and `null` (the defaults on both wires). */
const defined = <T extends Record<string, unknown>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined && value !== null)) as { [K in keyof T]?: NonNullable<T[K]> }

/** The engine's request for a Messages body. */
export const toEngineRequest = (body: MessagesRequest): ResponsesRequestBody => {
  const system = systemItems(body.system)
  const isParallelDisabled = body.tool_choice && 'disable_parallel_tool_use' in body.tool_choice && body.tool_choice.disable_parallel_tool_use === true
  return {
    input: [...system.items, ...toInputItems(body.messages)],
    stream: body.stream ?? false,
    store: false,
    service_tier: body.service_tier === 'standard_only' ? 'default' : 'auto',
    max_output_tokens: body.max_tokens,
    ...defined({
      instructions: system.instructions,
      model: body.model,
      models: body.models,
      preset: body.preset,
      tools: toTools(body.tools),
      tool_choice: toToolChoice(body.tool_choice),
      parallel_tool_calls: isParallelDisabled ? false : undefined,
      reasoning: toReasoning(body),
      text: toTextFormat(body.output_config),
      temperature: body.temperature,
      top_p: body.top_p,
      top_k: body.top_k,
      cache_control: body.cache_control,
      user: body.metadata?.user_id,
      session_id: body.session_id,
      provider: body.provider,
      plugins: pluginsWithTransforms(body.plugins, body.transforms),
      trace: body.trace,
      modalities: body.modalities,
      image_config: body.image_config,
    }),
  }
}

/**
 * `stop_sequences`: the Responses body has no field for them, so they ride beside it and routing sends the request
 * only where they are honoured (docs/decisions.md, POST /messages). An empty list asks for nothing.
 */
export const toExtensions = (body: MessagesRequest): RouteExtensions | undefined =>
  body.stop_sequences && body.stop_sequences.length > 0
    ? { values: { stop: body.stop_sequences }, fieldNames: { stop: 'body.stop_sequences' } }
    : undefined
