/**
 * A Chat Completions body → the request the engine runs (the validated `/responses` body), field by
 * field as docs/decisions.md (POST /chat/completions) lists them. Nothing is dropped silently: what has
 * no translation was refused by the schema already.
 */

import type { RouteExtensions } from '../../engine/request'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import { pluginsWithTransforms } from '../shared/transforms'
import type { RequestExtensions } from '../../providers/types'
import type { ChatCompletionsRequest } from './schemas'
import { toInputItems } from './messages'

type Reasoning = NonNullable<ResponsesRequestBody['reasoning']>

/**
 * OpenRouter's `reasoning` (and OpenAI's `reasoning_effort`) → the engine's. A summary is asked for whenever
 * reasoning is on and not excluded, so models that only show summaries (OpenAI's) still return some.
 */
const toReasoning = (body: ChatCompletionsRequest): Reasoning | undefined => {
  const { reasoning } = body
  const effort = reasoning?.effort ?? body.reasoning_effort ?? undefined
  if (!reasoning && !effort) return undefined
  const isOff = reasoning?.enabled === false || effort === 'none'
  return {
    ...(effort ? { effort } : {}),
    ...(reasoning?.enabled === undefined ? {} : { enabled: reasoning.enabled }),
    ...(reasoning?.max_tokens == null ? {} : { max_tokens: reasoning.max_tokens }),
    ...(isOff || reasoning?.exclude ? {} : { summary: 'auto' as const }),
  }
}

const toTextFormat = (format: ChatCompletionsRequest['response_format']): NonNullable<ResponsesRequestBody['text']> | undefined => {
  if (!format) return undefined
  if (format.type !== 'json_schema') return { format: { type: format.type } }
  const { name, schema, description, strict } = format.json_schema
  return {
    format: {
      type: 'json_schema',
      name,
      schema,
      ...(description === undefined ? {} : { description }),
      ...(strict == null ? {} : { strict }),
    },
  }
}

const toToolChoice = (choice: ChatCompletionsRequest['tool_choice']): ResponsesRequestBody['tool_choice'] => {
  if (choice == null) return undefined
  return typeof choice === 'string' ? choice : { type: 'function', name: choice.function.name }
}

// Server tools (`service:*`) pass as they are: the engine runs them in its loop, as on /responses.
const toTools = (tools: ChatCompletionsRequest['tools']): ResponsesRequestBody['tools'] =>
  tools?.map((entry) => {
    if (entry.type !== 'function') return entry
    const { function: tool } = entry as Extract<typeof entry, { type: 'function' }>
    return {
      type: 'function' as const,
      name: tool.name,
      ...(tool.description == null ? {} : { description: tool.description }),
      ...(tool.parameters == null ? {} : { parameters: tool.parameters }),
      ...(tool.strict == null ? {} : { strict: tool.strict }),
    }
  })

/** `verbosity` as the Responses body has it, beside any format. */
const withVerbosity = (text: ResponsesRequestBody['text'] | undefined, verbosity: ChatCompletionsRequest['verbosity']) =>
  verbosity == null ? text : { ...text, verbosity }

type Plugins = NonNullable<ResponsesRequestBody['plugins']>

/**
 * `web_search_options` asks for a web search before the answer: the web plugin, with the caller's location. A `web`
 * plugin the request configures itself wins.
 */
const withWebSearchOptions = (plugins: Plugins | undefined, options: ChatCompletionsRequest['web_search_options']): Plugins | undefined => {
  if (options == null || plugins?.some((plugin) => plugin.id === 'web')) return plugins
  const location = options.user_location?.approximate
  const web = { id: 'web' as const, ...(location ? { user_location: { type: 'approximate' as const, ...location } } : {}) }
  return [...(plugins ?? []), web]
}

/** Copies the fields whose value is set, leaving out `undefined` and `null` (the defaults on both wires). */
const defined = <T extends Record<string, unknown>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined && value !== null)) as { [K in keyof T]?: NonNullable<T[K]> }

/** The engine's request for a Chat Completions body. */
export const toEngineRequest = (body: ChatCompletionsRequest): ResponsesRequestBody => ({
  input: toInputItems(body.messages),
  stream: body.stream ?? false,
  store: false,
  service_tier: body.service_tier ?? 'auto',
  ...defined({
    model: body.model,
    models: body.models,
    preset: body.preset,
    tools: toTools(body.tools),
    tool_choice: toToolChoice(body.tool_choice),
    parallel_tool_calls: body.parallel_tool_calls,
    text: withVerbosity(toTextFormat(body.response_format), body.verbosity),
    reasoning: toReasoning(body),
    temperature: body.temperature,
    top_p: body.top_p,
    top_k: body.top_k,
    frequency_penalty: body.frequency_penalty,
    presence_penalty: body.presence_penalty,
    max_output_tokens: body.max_completion_tokens ?? body.max_tokens,
    user: body.user,
    session_id: body.session_id,
    provider: body.provider,
    plugins: withWebSearchOptions(pluginsWithTransforms(body.plugins, body.transforms), body.web_search_options),
    metadata: body.metadata,
    trace: body.trace,
    modalities: body.modalities,
    image_config: body.image_config,
  }),
})

/** Whether the caller asked to keep reasoning out of the answer (OpenRouter `reasoning.exclude`). */
export const isReasoningExcluded = (body: ChatCompletionsRequest): boolean => body.reasoning?.exclude === true

/**
 * `stop`, `seed`, `logprobs` / `top_logprobs` and `logit_bias`: settings the Responses body has no field for, so
 * they ride beside it and routing sends the request only where they are honoured. Values that ask for nothing
 * (`null`, `[]`, `{}`, `logprobs: false`) set nothing.
 */
export const toExtensions = (body: ChatCompletionsRequest): RouteExtensions | undefined => {
  const values: { -readonly [K in keyof RequestExtensions]: RequestExtensions[K] } = {}
  const stop = typeof body.stop === 'string' ? [body.stop] : body.stop
  if (stop && stop.length > 0) values.stop = stop
  if (body.seed != null) values.seed = body.seed
  if (body.logprobs === true) values.logprobs = { topLogprobs: body.top_logprobs ?? 0 }
  if (body.logit_bias && Object.keys(body.logit_bias).length > 0) values.logitBias = body.logit_bias
  return Object.keys(values).length > 0 ? { values } : undefined
}

/** Whether the caller asked for log probabilities, which the answer then carries (`choices[].logprobs`). */
export const isLogprobsRequested = (body: ChatCompletionsRequest): boolean => body.logprobs === true
