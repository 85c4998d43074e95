/**
 * Responses request → Chat Completions body. Mapping decisions:
 *
 * - Roles: `instructions` become the first `system` message; `developer` messages stay `developer`
 *   only with `developerRole: true` (see options.ts), else `system`. System and developer content
 *   parts must be text and are joined with a blank line (several members reject part lists there).
 * - Assistant history: text and refusal parts become the content string; `function_call` items
 *   become `tool_calls` on the assistant message right before them (consecutive calls and the
 *   text before them make ONE assistant message); `function_call_output` items become `tool`
 *   messages. Reasoning items are dropped unless `reasoningField` asks to send them back.
 * - `reasoning.effort` → `reasoning_effort`. OpenAI dialect: none/minimal/low/medium/high/xhigh
 *   as is (the chat API knows them all), `max` → `xhigh`. Compatible family (which knows at most
 *   low/medium/high): `none` → omitted, `minimal` → `low`, `xhigh`/`max` → `high`.
 *   `enabled: false` means `none`. `summary` and `max_tokens` have no chat equivalent: dropped.
 * - `text.format` → `response_format` (`json_object`, or `json_schema` {name, schema, strict,
 *   description}); `text.verbosity` → `verbosity` (OpenAI dialect only; xhigh/max → high).
 * - `tool_choice` and `parallel_tool_calls` are sent only with tools (OpenAI rejects them alone);
 *   `allowed_tools` sends only the allowed tools with its mode as the choice.
 * - `modalities` with `image` is refused: Chat Completions upstreams answer in text (OpenAI's chat API draws
 *   nothing), and an OpenAI-compatible server's image answers are not read. `["text"]` is what they answer anyway.
 * - `cache_control` has no chat equivalent (OpenAI caches automatically): dropped;
 *   `prompt_cache_key` is forwarded in the OpenAI dialect. The body's `top_logprobs`, `metadata`,
 *   `service_tier` and `store` are not forwarded.
 * - Extensions (`call.extensions`): `stop` (always a list), `seed`, `logprobs: true` with
 *   `top_logprobs`, `logit_bias`, as the family names them. One that `omitFields` keeps from this
 *   upstream is refused with a 400 rather than dropped.
 */

import { InvalidRequestError } from '../../core/errors'
import type {
  FunctionCallItem,
  FunctionCallOutputItem,
  FunctionTool,
  InputContentPart,
  InputItem,
  MessageItem,
  ReasoningItem,
  ResponsesRequest,
  Tool,
} from '../types'
import type { UpstreamCall } from '../contract'
import type { ChatSettings } from './options'
import type { ChatContentPart, ChatMessage, ChatToolCall } from './wire'

type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>

const OPENAI_EFFORT: Readonly<Record<string, string>> = {
  none: 'none',
  minimal: 'minimal',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'xhigh',
}

const COMPATIBLE_EFFORT: Readonly<Record<string, string>> = {
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'high',
  max: 'high',
}

const VERBOSITY: Readonly<Record<string, string>> = { low: 'low', medium: 'medium', high: 'high', xhigh: 'high', max: 'high' }

const unsupported = (message: string): never => {
  throw new InvalidRequestError(message)
}

const partText = (part: InputContentPart): string | undefined =>
  (part.type === 'input_text' || part.type === 'output_text') && typeof part.text === 'string' ? part.text : undefined

const toUserPart = (part: InputContentPart, where: string, providerName: string): ChatContentPart => {
  const text = partText(part)
  if (text !== undefined) return { type: 'text', text }
  if (part.type === 'input_image') {
    const image = part as Extract<InputContentPart, { type: 'input_image' }>
    if (typeof image.image_url !== 'string' || image.image_url === '') {
      return unsupported(`${where}: input_image needs an image_url (a URL or a data: URL); file_id is not supported by ${providerName}`)
    }
    return { type: 'image_url', image_url: { url: image.image_url, ...(image.detail ? { detail: image.detail } : {}) } }
  }
  if (part.type === 'input_file') {
    const file = part as Extract<InputContentPart, { type: 'input_file' }>
    const filename = typeof file.filename === 'string' ? { filename: file.filename } : {}
    if (typeof file.file_data === 'string') return { type: 'file', file: { file_data: file.file_data, ...filename } }
    if (typeof file.file_id === 'string') return { type: 'file', file: { file_id: file.file_id, ...filename } }
    return unsupported(`${where}: input_file needs file_data (a data: URL); file_url is not supported by ${providerName}`)
  }
  if (part.type === 'input_audio' && part.input_audio) return { type: 'input_audio', input_audio: part.input_audio }
  return unsupported(`${where}: content type "${part.type}" is not supported by ${providerName}`)
}

const toUserContent = (content: InputContentPart[], where: string, providerName: string): string | ChatContentPart[] => {
  const parts = content.map((part, index) => toUserPart(part, `${where}.content[${index}]`, providerName))
  const only = parts.length === 1 ? parts[0] : undefined
  return only?.type === 'text' ? only.text : parts
}

/** System/developer and assistant content as one string; `separator` joins the parts. */
const toTextContent = (content: string | InputContentPart[], where: string, providerName: string, separator: string): string => {
  if (typeof content === 'string') return content
  const texts: string[] = []
  for (const [index, part] of content.entries()) {
    const text = partText(part) ?? (part.type === 'refusal' && typeof part.refusal === 'string' ? part.refusal : undefined)
    if (text === undefined) unsupported(`${where}.content[${index}]: content type "${part.type}" is not supported here by ${providerName}`)
    texts.push(text!)
  }
  return texts.join(separator)
}

const toMessage = (item: MessageItem, where: string, settings: ChatSettings, providerName: string): ChatMessage => {
  switch (item.role) {
    case 'user':
      return { role: 'user', content: typeof item.content === 'string' ? item.content : toUserContent(item.content, where, providerName) }
    case 'assistant':
      return { role: 'assistant', content: toTextContent(item.content, where, providerName, '') }
    case 'system':
    case 'developer':
      return {
        role: item.role === 'developer' && settings.shouldUseDeveloperRole ? 'developer' : 'system',
        content: toTextContent(item.content, where, providerName, '\n\n'),
      }
    default:
      return unsupported(`${where}: message role "${String(item.role)}" is not supported by ${providerName}`)
  }
}

const toToolOutput = (item: FunctionCallOutputItem, where: string, providerName: string): string => {
  if (typeof item.output === 'string') return item.output
  let text = ''
  for (const [index, part] of item.output.entries()) {
    const value = partText(part)
    if (value === undefined) unsupported(`${where}.output[${index}]: tool results may only hold text for ${providerName}, not "${part.type}"`)
    text += value
  }
  return text
}

const reasoningTextOf = (item: ReasoningItem): string => {
  const parts = item.content?.length ? item.content : item.summary
  return (parts ?? []).map((part) => part.text).join('')
}

const attachReasoning = (message: AssistantMessage, text: string, settings: ChatSettings) => {
  const field = settings.reasoningField!
  message[field] = (message[field] ?? '') + text
}

const toMessages = (request: ResponsesRequest, settings: ChatSettings, providerName: string): ChatMessage[] => {
  const messages: ChatMessage[] = []
  if (request.instructions) messages.push({ role: 'system', content: request.instructions })
  if (typeof request.input === 'string') {
    messages.push({ role: 'user', content: request.input })
    return messages
  }
  let pendingReasoning = ''
  for (const [index, item] of request.input.entries()) {
    const where = `input[${index}]`
    const type = item.type ?? ('role' in item ? 'message' : undefined)
    switch (type) {
      case 'message': {
        const message = toMessage(item as MessageItem, where, settings, providerName)
        if (message.role === 'assistant' && pendingReasoning) {
          attachReasoning(message, pendingReasoning, settings)
          pendingReasoning = ''
        }
        messages.push(message)
        break
      }
      case 'function_call': {
        const call = item as FunctionCallItem
        const toolCall: ChatToolCall = { id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } }
        const last = messages.at(-1)
        const assistant: AssistantMessage = last?.role === 'assistant' ? last : { role: 'assistant', content: '' }
        ;(assistant.tool_calls ??= []).push(toolCall)
        if (pendingReasoning) {
          attachReasoning(assistant, pendingReasoning, settings)
          pendingReasoning = ''
        }
        if (assistant !== last) messages.push(assistant)
        break
      }
      case 'function_call_output': {
        const output = item as FunctionCallOutputItem
        messages.push({ role: 'tool', tool_call_id: output.call_id, content: toToolOutput(output, where, providerName) })
        break
      }
      case 'reasoning':
        if (settings.reasoningField) pendingReasoning += reasoningTextOf(item as ReasoningItem)
        break
      default:
        unsupported(`${where}: item type "${String((item as InputItem).type)}" is not supported by ${providerName}`)
    }
  }
  return messages
}

const toTool = (tool: Tool, index: number, providerName: string) => {
  if (tool.type !== 'function') return unsupported(`tools[${index}]: tool type "${tool.type}" is not supported by ${providerName}`)
  const { name, description, parameters, strict } = tool as FunctionTool
  return {
    type: 'function',
    function: {
      name,
      ...(description == null ? {} : { description }),
      ...(parameters == null ? {} : { parameters }),
      ...(strict == null ? {} : { strict }),
    },
  }
}

/** Sets `tools`, `tool_choice` and `parallel_tool_calls` on the body. */
const addTools = (body: Record<string, unknown>, request: ResponsesRequest, providerName: string) => {
  let tools = request.tools ?? []
  let toolChoice: unknown
  const choice = request.tool_choice
  if (choice === 'auto' || choice === 'none' || choice === 'required') toolChoice = choice
  else if (choice?.type === 'function' && typeof choice.name === 'string') toolChoice = { type: 'function', function: { name: choice.name } }
  else if (choice?.type === 'allowed_tools') {
    const allowed = new Set(
      (Array.isArray(choice.tools) ? choice.tools : []).flatMap((entry: { type?: string; name?: string }) =>
        entry?.type === 'function' && typeof entry.name === 'string' ? [entry.name] : [],
      ),
    )
    tools = tools.filter((tool) => tool.type === 'function' && allowed.has((tool as FunctionTool).name))
    toolChoice = choice.mode === 'required' ? 'required' : 'auto'
  } else if (choice !== undefined) unsupported(`tool_choice: type "${String(choice.type)}" is not supported by ${providerName}`)
  if (tools.length === 0) return
  body.tools = tools.map((tool, index) => toTool(tool, index, providerName))
  if (toolChoice !== undefined) body.tool_choice = toolChoice
  if (typeof request.parallel_tool_calls === 'boolean') body.parallel_tool_calls = request.parallel_tool_calls
}

const reasoningEffort = (request: ResponsesRequest, settings: ChatSettings): string | undefined => {
  const reasoning = request.reasoning
  if (!reasoning) return undefined
  const effort = reasoning.enabled === false ? 'none' : reasoning.effort
  if (!effort) return undefined
  return (settings.isOpenAIDialect ? OPENAI_EFFORT : COMPATIBLE_EFFORT)[effort]
}

const responseFormat = (request: ResponsesRequest): unknown => {
  const format = request.text?.format
  if (format?.type === 'json_object') return { type: 'json_object' }
  if (format?.type === 'json_schema') {
    return {
      type: 'json_schema',
      json_schema: {
        name: format.name,
        schema: format.schema,
        ...(format.description == null ? {} : { description: format.description }),
        ...(format.strict == null ? {} : { strict: format.strict }),
      },
    }
  }
  return undefined
}

const SAMPLING = ['temperature', 'top_p', 'frequency_penalty', 'presence_penalty'] as const

/** The extensions' Chat Completions fields. */
const addExtensions = (body: Record<string, unknown>, call: UpstreamCall, settings: ChatSettings, providerName: string) => {
  const { extensions } = call
  if (!extensions) return
  const fields: Record<string, unknown> = {}
  if (extensions.stop) fields.stop = [...extensions.stop]
  if (extensions.seed !== undefined) fields.seed = extensions.seed
  if (extensions.logprobs) {
    fields.logprobs = true
    if (extensions.logprobs.topLogprobs > 0) fields.top_logprobs = extensions.logprobs.topLogprobs
  }
  if (extensions.logitBias) fields.logit_bias = { ...extensions.logitBias }
  for (const [field, value] of Object.entries(fields)) {
    if (settings.omitFields.includes(field)) unsupported(`${field}: is not sent to ${providerName} (its omitFields setting leaves it out)`)
    body[field] = value
  }
}

/** Builds the Chat Completions JSON body (as an object; the adapter serialises it once). */
export const buildChatBody = (call: UpstreamCall, settings: ChatSettings, providerName: string): Record<string, unknown> => {
  const { request } = call
  if (request.modalities?.includes('image')) unsupported(`modalities: image output is not supported by ${providerName}`)
  const body: Record<string, unknown> = { model: call.upstreamModel, messages: toMessages(request, settings, providerName) }
  addTools(body, request, providerName)
  for (const field of SAMPLING) if (typeof request[field] === 'number') body[field] = request[field]
  if (settings.shouldSendTopK && typeof request.top_k === 'number') body.top_k = request.top_k
  if (typeof request.max_output_tokens === 'number') body[settings.maxTokensField] = request.max_output_tokens
  addExtensions(body, call, settings, providerName)
  const effort = reasoningEffort(request, settings)
  if (effort) body.reasoning_effort = effort
  const format = responseFormat(request)
  if (format) body.response_format = format
  if (settings.isOpenAIDialect) {
    const verbosity = request.text?.verbosity ? VERBOSITY[request.text.verbosity] : undefined
    if (verbosity) body.verbosity = verbosity
    if (typeof request.prompt_cache_key === 'string') body.prompt_cache_key = request.prompt_cache_key
  }
  if (call.endUserId) body.user = call.endUserId
  if (call.stream) {
    body.stream = true
    body.stream_options = { include_usage: true }
  }
  for (const field of settings.omitFields) delete body[field]
  return body
}
