/**
 * Our public wire is OpenAI's Responses API, so the request mostly passes through. What changes:
 * the model id, `store: false` (we keep no upstream state), the end-user hash as
 * `safety_identifier`, and the removal of everything OpenAI would reject with a 400
 * (gateway-only fields, other providers' reasoning, `cache_control` markers).
 */

import { InvalidRequestError } from '../../core/errors'
import type { UpstreamCall, UpstreamRequest, UpstreamTarget } from '../contract'
import type { InputItem, NativeWebSearch, ResponsesRequest, Tool } from '../types'
import { OPENAI_REASONING_FORMAT } from './wire'

/**
 * Request fields forwarded unchanged when the client set them (null means "default" to
 * OpenAI, so nulls are left out). Everything else is either translated below (`input`, `tools`,
 * `reasoning`, `text`, `service_tier`, `background`, `model`, `stream`, `store`,
 * `safety_identifier`) or never sent:
 * - gateway-only: `models`, `provider`, `plugins`, `route`, `session_id`, `debug`, `trace`,
 *   `transforms`, `stop_server_tools_when`, `max_tool_calls` (our server-tool loop), `usage`;
 * - not OpenAI Responses parameters: `top_k`, `frequency_penalty`, `presence_penalty`,
 *   `cache_control` (OpenAI caches prefixes by itself);
 * - raw end-user ids `user` / `safety_identifier` (only the keyed hash `call.endUserId` goes up);
 * - stateful: `previous_response_id`, `conversation` (we send `store: false`).
 * `prompt_cache_options` ({mode, ttl}) is OpenAI's own parameter (GPT-5.6 and newer): routing sends it only to
 * endpoints that list it, and it is forwarded; content parts' `prompt_cache_breakpoint` markers are forwarded to
 * those endpoints and dropped for the others.
 * `modalities` and `image_config` become OpenAI's `image_generation` tool (see `withImageOutput`).
 */
const FORWARDED_FIELDS = [
  'instructions',
  'tool_choice',
  'parallel_tool_calls',
  'temperature',
  'top_p',
  'max_output_tokens',
  'top_logprobs',
  'metadata',
  'include',
  'truncation',
  'prompt',
  'prompt_cache_key',
  'prompt_cache_options',
] as const

/** Tool kinds OpenAI runs or accepts itself (openai-node `Tool` union). Anything else is ours. */
/** The tool types besides `function` that OpenAI's Responses API takes (its tools union). */
export const OPENAI_PROVIDER_TOOLS = [
  'custom',
  'namespace',
  'tool_search',
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
  'file_search',
  'code_interpreter',
  'image_generation',
  'mcp',
  'computer',
  'computer_use_preview',
  'local_shell',
  'shell',
  'apply_patch',
  'programmatic_tool_calling',
] as const

const OPENAI_TOOL_TYPES = new Set<string>(['function', ...OPENAI_PROVIDER_TOOLS])

/** What `include` must name for OpenAI to return the text's log probabilities (the `logprobs` extension). */
const LOGPROBS_INCLUDE = 'message.output_text.logprobs'

/** What `include` must name for a `web_search_call` to carry the pages it found (`action.sources`). */
const WEB_SEARCH_SOURCES_INCLUDE = 'web_search_call.action.sources'

/** Function-tool fields that only the gateway understands. */
const GATEWAY_TOOL_FIELDS = new Set(['async', 'cache_control'])

/**
 * Input item kinds OpenAI accepts with `store: false` (openai-node `ResponseInputItem`).
 * `item_reference` is left out on purpose: nothing is stored upstream for it to point at.
 */
const OPENAI_INPUT_ITEM_TYPES = new Set([
  'message',
  'function_call',
  'function_call_output',
  'reasoning',
  'custom_tool_call',
  'custom_tool_call_output',
  'web_search_call',
  'file_search_call',
  'computer_call',
  'computer_call_output',
  'code_interpreter_call',
  'image_generation_call',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'mcp_call',
  'tool_search_call',
  'tool_search_output',
  'additional_tools',
  'compaction',
  'compaction_trigger',
  'program',
  'program_output',
])

/**
 * Reasoning sent back to OpenAI. Kept: `id`, `summary`, `encrypted_content` (what OpenAI needs to
 * resume its own chain of thought). Dropped: `signature` and `format` (ours, OpenAI rejects them),
 * `content` (plain reasoning text OpenAI does not take back) and `status`.
 * An item is sent only when it carries `encrypted_content`: with `store: false` OpenAI cannot
 * look a bare `rs_…` id up and answers 404. Items whose `format` names another provider
 * (`anthropic-claude-v1`, `google-gemini-v1`, `xai-responses-v1`, Azure's or Bedrock's
 * encryption, …) are dropped, as their ciphertext means nothing to OpenAI; an item without
 * `format` is assumed to be OpenAI's (clients that called OpenAI directly never set it).
 */
const OPENAI_REASONING_FORMATS = new Set([OPENAI_REASONING_FORMAT])

/** `text.verbosity` beyond OpenAI's low/medium/high (docs/decisions.md, POST /responses) → its highest level. */
const VERBOSITY_ALIASES = new Map([
  ['xhigh', 'high'],
  ['max', 'high'],
])

/** spec: service_tier `fast` is an alias of `priority`. */
const SERVICE_TIER_ALIASES = new Map([['fast', 'priority']])

type Json = Record<string, unknown>

const withoutFields = (object: Json, fields: Set<string>): Json => {
  const copy: Json = {}
  for (const key in object) if (!fields.has(key)) copy[key] = object[key]
  return copy
}

const CACHE_CONTROL = new Set(['cache_control'])
const ID = new Set(['id'])
const SDK_CALL_FIELDS = new Set(['id', 'parsed_arguments'])

/**
 * OpenAI validates the optional ids of history items: "Expected an ID that begins with 'msg'"
 * (or 'fc'), at most 64 letters, digits, `_` or `-`. Ids minted elsewhere are dropped, not sent.
 */
const MESSAGE_ID = /^msg[\w-]{0,61}$/
const FUNCTION_CALL_ID = /^fc[\w-]{0,62}$/
const hasForeignId = (item: Json, pattern: RegExp) => typeof item.id === 'string' && !pattern.test(item.id)

// The openai SDK adds these to items it parsed; sending a finalResponse() back must not trip OpenAI.
const SDK_PART_FIELDS = new Set(['cache_control', 'parsed'])
// Models without explicit prompt caching reject its breakpoints: they are dropped there (OpenAI still caches implicitly).
const SDK_PART_AND_BREAKPOINT_FIELDS = new Set([...SDK_PART_FIELDS, 'prompt_cache_breakpoint'])

const hasAnyField = (part: unknown, fields: Set<string>): boolean => {
  if (!part || typeof part !== 'object') return false
  for (const field of fields) if (field in part) return true
  return false
}

/** Copies a message only when it carries `cache_control` markers (Anthropic-style, ours), SDK-added `parsed` or breakpoints to drop. */
const toOpenAIMessage = (item: Json, partFields: Set<string>): Json => {
  let message = 'cache_control' in item ? withoutFields(item, CACHE_CONTROL) : item
  const content = message.content
  if (Array.isArray(content) && content.some((part) => hasAnyField(part, partFields))) {
    message = { ...message, content: content.map((part: Json) => (hasAnyField(part, partFields) ? withoutFields(part, partFields) : part)) }
  }
  return hasForeignId(message, MESSAGE_ID) ? withoutFields(message, ID) : message
}

const toOpenAIReasoning = (item: Json): Json | undefined => {
  if (typeof item.format === 'string' && !OPENAI_REASONING_FORMATS.has(item.format)) return undefined
  if (typeof item.encrypted_content !== 'string' || item.encrypted_content === '') return undefined
  return {
    type: 'reasoning',
    ...(typeof item.id === 'string' ? { id: item.id } : {}),
    summary: Array.isArray(item.summary) ? item.summary : [],
    encrypted_content: item.encrypted_content,
  }
}

const toOpenAIInput = (input: InputItem[], keepsBreakpoints: boolean): Json[] => {
  const partFields = keepsBreakpoints ? SDK_PART_FIELDS : SDK_PART_AND_BREAKPOINT_FIELDS
  const items: Json[] = []
  for (const [index, raw] of input.entries()) {
    const item = raw as Json
    // An EasyInputMessage ({role, content}) may omit `type`.
    const type = item.type ?? (typeof item.role === 'string' ? 'message' : undefined)
    if (typeof type !== 'string' || !OPENAI_INPUT_ITEM_TYPES.has(type)) {
      throw new InvalidRequestError(`input[${index}]: item type "${String(type)}" is not supported by OpenAI`)
    }
    if (type === 'message') items.push(toOpenAIMessage(item, partFields))
    else if (type === 'reasoning') {
      const reasoning = toOpenAIReasoning(item)
      if (reasoning) items.push(reasoning)
    } else if (type === 'function_call') {
      const fields = hasForeignId(item, FUNCTION_CALL_ID) ? SDK_CALL_FIELDS : new Set(['parsed_arguments'])
      items.push('parsed_arguments' in item || fields.has('id') ? withoutFields(item, fields) : item)
    } else items.push(item)
  }
  return items
}

const toOpenAITools = (tools: Tool[]): Json[] =>
  tools.map((tool, index) => {
    if (!OPENAI_TOOL_TYPES.has(tool.type)) {
      throw new InvalidRequestError(`tools[${index}]: tool type "${tool.type}" is not supported by OpenAI`)
    }
    if (tool.type !== 'function') return tool
    for (const key in tool) if (GATEWAY_TOOL_FIELDS.has(key)) return withoutFields(tool, GATEWAY_TOOL_FIELDS)
    return tool
  })

/** `image_config` keys that are `image_generation` tool options (openai-node `Tool.ImageGeneration`). */
const IMAGE_TOOL_OPTIONS = new Set(['action', 'background', 'input_fidelity', 'moderation', 'output_compression', 'output_format', 'partial_images', 'quality', 'size'])

/**
 * `modalities` with `image`: OpenAI's models draw through the `image_generation` tool, so it is added, its
 * options from `image_config` (OpenAI's own names; any other key is a 400 naming it). Images only
 * (`["image"]`) also forces the tool, unless the caller chose a `tool_choice`. A caller who already sent
 * the tool keeps theirs, and then `image_config` is refused rather than merged into it.
 * `["text"]` alone asks for what a Responses model answers anyway, so nothing changes.
 */
const withImageOutput = (request: ResponsesRequest, body: Json) => {
  const config = request.image_config
  if (!request.modalities?.includes('image')) return
  const tools = (body.tools as Json[] | undefined) ?? []
  if (tools.some((tool) => tool.type === 'image_generation')) {
    if (config && Object.keys(config).length > 0) {
      throw new InvalidRequestError('image_config: set these options on the image_generation tool you sent, not in both places')
    }
  } else {
    const tool: Json = { type: 'image_generation' }
    for (const [key, value] of Object.entries(config ?? {})) {
      if (!IMAGE_TOOL_OPTIONS.has(key)) {
        throw new InvalidRequestError(`image_config.${key}: not supported by OpenAI (it takes ${[...IMAGE_TOOL_OPTIONS].join(', ')})`)
      }
      tool[key] = value
    }
    body.tools = [...tools, tool]
  }
  if (!request.modalities.includes('text') && request.tool_choice === undefined) body.tool_choice = { type: 'image_generation' }
}

/**
 * The native web search as OpenAI's `web_search` tool (openai-node `WebSearchTool`): `filters.allowed_domains`,
 * `search_context_size`, `user_location`; routing sends no other parameter here (index.ts). The pages a search
 * found come back only when `include` asks for them, and they are what the client's `web_search_call` shows.
 */
const withNativeWebSearch = (search: NativeWebSearch, body: Json) => {
  const tool: Json = { type: 'web_search' }
  if (search.allowedDomains) tool.filters = { allowed_domains: [...search.allowedDomains] }
  if (search.searchContextSize) tool.search_context_size = search.searchContextSize
  if (search.userLocation) tool.user_location = { ...search.userLocation }
  body.tools = [...((body.tools as Json[] | undefined) ?? []), tool]
  const include = Array.isArray(body.include) ? (body.include as string[]) : []
  if (!include.includes(WEB_SEARCH_SOURCES_INCLUDE)) body.include = [...include, WEB_SEARCH_SOURCES_INCLUDE]
}

/**
 * `reasoning`: `effort` (none … max, OpenAI's own scale) and `summary` pass through, as do
 * OpenAI's `context` and `mode`. `enabled: false` without an effort asks for `effort: "none"`
 * (OpenAI has no on/off switch); `enabled: true` and `max_tokens` have no OpenAI counterpart
 * (no thinking budget) and leave the model's default effort.
 */
const toOpenAIReasoningConfig = (reasoning: NonNullable<ResponsesRequest['reasoning']>): Json | undefined => {
  const config: Json = {}
  const source = reasoning as Json
  if (source.effort != null) config.effort = source.effort
  else if (source.enabled === false) config.effort = 'none'
  for (const key of ['summary', 'context', 'mode']) if (source[key] != null) config[key] = source[key]
  return Object.keys(config).length > 0 ? config : undefined
}

const toOpenAIText = (text: NonNullable<ResponsesRequest['text']>): Json | undefined => {
  const config: Json = {}
  if (text.format != null) config.format = text.format
  if (text.verbosity != null) config.verbosity = VERBOSITY_ALIASES.get(text.verbosity) ?? text.verbosity
  return Object.keys(config).length > 0 ? config : undefined
}

/** The JSON body of `POST /responses`. */
export const toOpenAIBody = (call: UpstreamCall): Json => {
  const request = call.request
  const body: Json = {
    model: call.upstreamModel,
    input: typeof request.input === 'string' ? request.input : toOpenAIInput(request.input, call.hasExplicitPromptCache === true),
  }
  for (const field of FORWARDED_FIELDS) {
    const value = request[field]
    if (value !== undefined && value !== null) body[field] = value
  }
  if (request.tools && request.tools.length > 0) body.tools = toOpenAITools(request.tools)
  withImageOutput(request, body)
  if (call.nativeWebSearch) withNativeWebSearch(call.nativeWebSearch, body)
  if (request.reasoning) {
    const reasoning = toOpenAIReasoningConfig(request.reasoning)
    if (reasoning) body.reasoning = reasoning
  }
  if (request.text) {
    const text = toOpenAIText(request.text)
    if (text) body.text = text
  }
  if (typeof request.service_tier === 'string') body.service_tier = SERVICE_TIER_ALIASES.get(request.service_tier) ?? request.service_tier
  // A background request is run detached by the gateway itself (docs/decisions.md, Background runs): its upstream call
  // is an ordinary one, streamed to the gateway, so `background: true` is never forwarded.
  if (request.background === false) body.background = false
  if (call.extensions?.logprobs) {
    // The only extension the Responses API has: log probabilities come with the text when `include` asks.
    const include = Array.isArray(body.include) ? (body.include as string[]) : []
    body.include = include.includes(LOGPROBS_INCLUDE) ? include : [...include, LOGPROBS_INCLUDE]
    body.top_logprobs = call.extensions.logprobs.topLogprobs
  }
  if (call.endUserId) body.safety_identifier = call.endUserId
  body.store = false
  body.stream = call.stream
  return body
}

/** Headers we set ourselves; configured headers cannot replace them (in any letter case). */
const OWN_HEADERS = new Set(['authorization', 'content-type', 'accept'])

export const buildOpenAIRequest = (call: UpstreamCall, target: UpstreamTarget): UpstreamRequest => {
  const headers: Record<string, string> = {}
  for (const name in target.headers) if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = target.headers[name]!
  headers.authorization = `Bearer ${target.apiKey}`
  headers['content-type'] = 'application/json'
  headers.accept = call.stream ? 'text/event-stream' : 'application/json'
  return { url: `${target.baseURL}/responses`, method: 'POST', headers, body: JSON.stringify(toOpenAIBody(call)) }
}
