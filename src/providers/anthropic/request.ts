/**
 * Responses request → Anthropic Messages request. Anthropic differs from the Responses model in
 * ways this module absorbs: the system prompt is a top-level field, turns must alternate
 * user/assistant, tool results are user content, `max_tokens` is required, and thinking is a
 * token budget.
 */

import { InternalError, InvalidRequestError } from '../../core/errors'
import type { UpstreamCall, UpstreamRequest, UpstreamTarget } from '../contract'
import type { InputContentPart, ReasoningItem, ResponsesRequest, Tool, ToolChoice } from '../types'
import {
  ANTHROPIC_REASONING_FORMAT,
  ANTHROPIC_VERSION,
  isRecord,
  type CacheControl,
  type ContentBlock,
  type DocumentBlock,
  type ImageBlock,
  type MessageParam,
  type MessagesRequestBody,
  type OutputConfigParam,
  type TextBlock,
  type ThinkingParam,
  type ToolChoiceParam,
  type ToolParam,
  type ToolResultBlock,
  type WebSearchToolParam,
} from './wire'
import { webSearchTool } from './web-search'

const PROVIDER = 'Anthropic'

/** `max_tokens` when the client sent no `max_output_tokens` (Anthropic requires one). */
export const DEFAULT_MAX_TOKENS = 8192

/** Anthropic's floor for `thinking.budget_tokens`. */
const MIN_THINKING_BUDGET = 1024

/** Anthropic accepts at most this many `cache_control` breakpoints per request. */
const MAX_CACHE_BREAKPOINTS = 4

/**
 * `reasoning.effort` → manual thinking `budget_tokens`. The steps double from Anthropic's
 * 1,024 floor; xhigh/max stop at 32,000, above which Anthropic advises batch processing.
 */
const EFFORT_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32000,
  max: 32000,
}

/** `reasoning.effort` → adaptive thinking's `output_config.effort` (Anthropic has no `minimal`). */
const ADAPTIVE_EFFORTS: Readonly<Record<string, string>> = {
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'max',
}

const JSON_OBJECT_INSTRUCTION =
  'Respond with a single valid JSON object and nothing else: no Markdown code fences and no text before or after it.'

const JSON_SCHEMA_INSTRUCTION =
  'Respond with a single valid JSON object that conforms to the JSON Schema below, and nothing else: no Markdown code fences and no text before or after it.'

/**
 * Settings read from `target.options` (all optional):
 * - `defaultMaxTokens`: positive integer, `max_tokens` when the client sent none (default 8192).
 * - `thinking`: `manual` (default; `thinking: {type: 'enabled', budget_tokens}`) or `adaptive`
 *   (`thinking: {type: 'adaptive'}` plus `output_config.effort`). Claude Opus 4.7 and later and
 *   Sonnet 5 reject manual thinking, older models reject adaptive: configure it per model.
 * - `structuredOutputs`: `native` (default; `output_config.format`, Claude 4.5 and later) or
 *   `instruction` (a system instruction carrying the schema, for older models).
 */
interface AdapterOptions {
  defaultMaxTokens: number
  thinkingMode: 'manual' | 'adaptive'
  structuredOutputs: 'native' | 'instruction'
}

const readOptions = (options: Record<string, string> | undefined): AdapterOptions => {
  let defaultMaxTokens = DEFAULT_MAX_TOKENS
  const rawMax = options?.defaultMaxTokens
  if (rawMax !== undefined) {
    defaultMaxTokens = Number(rawMax)
    if (!Number.isSafeInteger(defaultMaxTokens) || defaultMaxTokens < 1) {
      throw new InternalError('anthropic: target.options.defaultMaxTokens must be a positive integer')
    }
  }
  const thinking = options?.thinking ?? 'manual'
  if (thinking !== 'manual' && thinking !== 'adaptive') throw new InternalError('anthropic: target.options.thinking must be "manual" or "adaptive"')
  const structured = options?.structuredOutputs ?? 'native'
  if (structured !== 'native' && structured !== 'instruction') {
    throw new InternalError('anthropic: target.options.structuredOutputs must be "native" or "instruction"')
  }
  return { defaultMaxTokens, thinkingMode: thinking, structuredOutputs: structured }
}

const invalid = (path: string, message: string) => new InvalidRequestError(`${path}: ${message}`)

const readCacheControl = (value: unknown): CacheControl | undefined => {
  if (!isRecord(value) || value.type !== 'ephemeral') return undefined
  return typeof value.ttl === 'string' ? { type: 'ephemeral', ttl: value.ttl } : { type: 'ephemeral' }
}

/**
 * The breakpoint a content block or history item asks for: Anthropic's own `cache_control`, or the
 * Responses API's `prompt_cache_breakpoint` (`{mode: "explicit"}`), which takes its TTL from
 * `prompt_cache_options.ttl` (applied with the other breakpoints in `applyCacheControl`).
 */
const breakpointOf = (record: Record<string, unknown>): CacheControl | undefined =>
  readCacheControl(record.cache_control) ?? (isRecord(record.prompt_cache_breakpoint) ? { type: 'ephemeral' } : undefined)

/** Splits a base64 `data:` URL; `undefined` when `url` is not a data URL at all. */
const parseDataUrl = (url: string, path: string): { mediaType: string; data: string } | undefined => {
  if (!url.startsWith('data:')) return undefined
  const comma = url.indexOf(',')
  const header = comma < 0 ? '' : url.slice(5, comma)
  if (!header.endsWith(';base64')) throw invalid(path, 'data URLs must be base64-encoded')
  const semicolon = header.indexOf(';')
  return { mediaType: header.slice(0, semicolon).toLowerCase(), data: url.slice(comma + 1) }
}

const decodeBase64Utf8 = (data: string): string => {
  const binary = atob(data)
  const bytes = new Uint8Array(binary.length)
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index)
  return new TextDecoder().decode(bytes)
}

const imageBlock = (part: Record<string, unknown>, path: string): ImageBlock => {
  const url = part.image_url
  if (typeof url !== 'string' || url === '') {
    throw invalid(path, part.file_id ? 'file_id references are not supported by Anthropic; send image_url' : 'input_image needs an image_url')
  }
  const data = parseDataUrl(url, path)
  return data
    ? { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } }
    : { type: 'image', source: { type: 'url', url } }
}

const documentBlock = (part: Record<string, unknown>, path: string): DocumentBlock => {
  const title = typeof part.filename === 'string' && part.filename !== '' ? { title: part.filename } : {}
  if (typeof part.file_data === 'string' && part.file_data !== '') {
    const data = parseDataUrl(part.file_data, path)
    if (!data) throw invalid(path, 'file_data must be a base64 data: URL')
    if (data.mediaType === 'application/pdf') {
      return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: data.data }, ...title }
    }
    if (data.mediaType === 'text/plain') {
      let text: string
      try {
        text = decodeBase64Utf8(data.data)
      } catch {
        throw invalid(path, 'file_data is not valid base64')
      }
      return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: text }, ...title }
    }
    throw invalid(path, `file type "${data.mediaType}" is not supported by Anthropic (PDF and plain text are)`)
  }
  if (typeof part.file_url === 'string' && part.file_url !== '') {
    return { type: 'document', source: { type: 'url', url: part.file_url }, ...title }
  }
  throw invalid(path, part.file_id ? 'file_id references are not supported by Anthropic; send file_data or file_url' : 'input_file needs file_data or file_url')
}

/**
 * One content part → one block, or `null` for an empty text (Anthropic rejects empty text blocks).
 * `shouldKeepCache` is false inside tool results, where breakpoints belong on the tool_result itself.
 */
const partBlock = (part: InputContentPart, path: string, shouldKeepCache = true): TextBlock | ImageBlock | DocumentBlock | null => {
  const record = part as Record<string, unknown>
  let block: TextBlock | ImageBlock | DocumentBlock | null
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text': {
      const text = record.text
      if (typeof text !== 'string') throw invalid(path, `${part.type} needs a text string`)
      block = text === '' ? null : { type: 'text', text }
      break
    }
    case 'refusal': {
      const text = record.refusal
      block = typeof text === 'string' && text !== '' ? { type: 'text', text } : null
      break
    }
    case 'input_image':
      block = imageBlock(record, path)
      break
    case 'input_file':
      block = documentBlock(record, path)
      break
    default:
      throw invalid(path, `content part type "${part.type}" is not supported by ${PROVIDER}`)
  }
  if (block && shouldKeepCache) {
    const cacheControl = breakpointOf(record)
    if (cacheControl) block.cache_control = cacheControl
  }
  return block
}

const contentBlocks = (content: string | InputContentPart[], path: string): Array<TextBlock | ImageBlock | DocumentBlock> => {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }]
  if (!Array.isArray(content)) throw invalid(path, 'content must be a string or an array of parts')
  const blocks: Array<TextBlock | ImageBlock | DocumentBlock> = []
  for (const [index, part] of content.entries()) {
    const block = partBlock(part, `${path}[${index}]`)
    if (block) blocks.push(block)
  }
  return blocks
}

const systemBlocks = (content: string | InputContentPart[], path: string): TextBlock[] => {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }]
  if (!Array.isArray(content)) throw invalid(path, 'content must be a string or an array of parts')
  const blocks: TextBlock[] = []
  for (const [index, part] of content.entries()) {
    if (part.type !== 'input_text' && part.type !== 'text') {
      throw invalid(`${path}[${index}]`, `content part type "${part.type}" is not supported in system messages by ${PROVIDER}`)
    }
    const block = partBlock(part, `${path}[${index}]`) as TextBlock | null
    if (block) blocks.push(block)
  }
  return blocks
}

const toolResultContent = (output: unknown, path: string): ToolResultBlock['content'] => {
  if (typeof output === 'string') return output
  if (!Array.isArray(output)) throw invalid(path, 'output must be a string or an array of parts')
  const blocks: Array<TextBlock | ImageBlock | DocumentBlock> = []
  for (const [index, part] of (output as InputContentPart[]).entries()) {
    const block = partBlock(part, `${path}[${index}]`, false)
    if (block) blocks.push(block)
  }
  return blocks
}

const parseArguments = (value: unknown, path: string): Record<string, unknown> => {
  if (value === undefined || value === '') return {}
  if (typeof value !== 'string') throw invalid(path, 'function_call arguments must be a JSON string')
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    throw invalid(path, 'function_call arguments are not valid JSON')
  }
  if (!isRecord(parsed)) throw invalid(path, 'function_call arguments must be a JSON object for Anthropic')
  return parsed
}

/**
 * A reasoning item → the thinking blocks Anthropic verifies on the way back. Only Claude's own
 * thinking is sent: `format: anthropic-claude-v1`, or no provider format but a signature. Other
 * providers' reasoning (and unsigned thinking, which Anthropic rejects) is dropped.
 */
const reasoningBlocks = (item: ReasoningItem): ContentBlock[] => {
  const format = item.format
  const signature = typeof item.signature === 'string' && item.signature !== '' ? item.signature : undefined
  const isClaude = format === ANTHROPIC_REASONING_FORMAT || ((format === undefined || format === null || format === 'unknown') && signature !== undefined)
  if (!isClaude) return []
  const blocks: ContentBlock[] = []
  if (signature) {
    let thinking = ''
    for (const part of item.content ?? []) if (typeof part?.text === 'string') thinking += part.text
    blocks.push({ type: 'thinking', thinking, signature })
  }
  if (typeof item.encrypted_content === 'string' && item.encrypted_content !== '') {
    blocks.push({ type: 'redacted_thinking', data: item.encrypted_content })
  }
  return blocks
}

/** A turn being assembled. `leading` blocks must open the turn: thinking (assistant), tool results (user). */
interface Turn {
  role: 'user' | 'assistant'
  leading: ContentBlock[]
  rest: ContentBlock[]
}

const translateInput = (request: ResponsesRequest): { system: TextBlock[]; messages: MessageParam[] } => {
  const system: TextBlock[] = []
  const turns: Turn[] = []
  // Consecutive items of one role merge into one turn: Anthropic requires strict alternation.
  const turnFor = (role: Turn['role']): Turn => {
    const last = turns[turns.length - 1]
    if (last?.role === role) return last
    const turn: Turn = { role, leading: [], rest: [] }
    turns.push(turn)
    return turn
  }

  if (typeof request.instructions === 'string' && request.instructions !== '') system.push({ type: 'text', text: request.instructions })

  const input = request.input
  if (typeof input === 'string') {
    if (input !== '') turnFor('user').rest.push({ type: 'text', text: input })
  } else if (Array.isArray(input)) {
    for (const [index, raw] of input.entries()) {
      const path = `input[${index}]`
      const item = raw as Record<string, unknown>
      const type = item.type ?? (item.role === undefined ? undefined : 'message')
      switch (type) {
        case 'message': {
          const role = item.role
          const content = item.content as string | InputContentPart[]
          if (role === 'system' || role === 'developer') {
            system.push(...systemBlocks(content, `${path}.content`))
          } else if (role === 'user' || role === 'assistant') {
            const blocks = contentBlocks(content, `${path}.content`)
            if (blocks.length > 0) turnFor(role).rest.push(...blocks)
          } else {
            throw invalid(path, `message role "${String(role)}" is not supported by ${PROVIDER}`)
          }
          break
        }
        case 'function_call': {
          if (typeof item.call_id !== 'string' || typeof item.name !== 'string') throw invalid(path, 'function_call needs call_id and name')
          const input = parseArguments(item.arguments, path)
          const cacheControl = breakpointOf(item)
          turnFor('assistant').rest.push({ type: 'tool_use', id: item.call_id, name: item.name, input, ...(cacheControl ? { cache_control: cacheControl } : {}) })
          break
        }
        case 'function_call_output': {
          if (typeof item.call_id !== 'string') throw invalid(path, 'function_call_output needs a call_id')
          const cacheControl = breakpointOf(item)
          turnFor('user').leading.push({
            type: 'tool_result',
            tool_use_id: item.call_id,
            content: toolResultContent(item.output, `${path}.output`),
            // Set by /messages clients (an Anthropic tool_result's `is_error`); other item sources never carry it.
            ...(item.is_error === true ? { is_error: true } : {}),
            ...(cacheControl ? { cache_control: cacheControl } : {}),
          })
          break
        }
        case 'reasoning': {
          const blocks = reasoningBlocks(item as ReasoningItem)
          if (blocks.length > 0) turnFor('assistant').leading.push(...blocks)
          break
        }
        case 'web_search_call':
          // A search already made (by Claude or another model): its pages cannot be given back to Claude as results
          // (web-search.ts), and what was learned from them is in the answer's text.
          break
        default:
          throw invalid(path, `item type "${String(type)}" is not supported by ${PROVIDER}`)
      }
    }
  }

  const messages = turns.map((turn): MessageParam => ({
    role: turn.role,
    content: turn.leading.length === 0 ? turn.rest : [...turn.leading, ...turn.rest],
  }))
  return { system, messages }
}

const translateTools = (tools: Tool[]): ToolParam[] =>
  tools.map((tool, index) => {
    if (tool.type !== 'function') throw invalid(`tools[${index}]`, `tool type "${tool.type}" is not supported by ${PROVIDER}`)
    const { name, description, parameters } = tool as Record<string, unknown>
    if (typeof name !== 'string' || name === '') throw invalid(`tools[${index}]`, 'function tools need a name')
    const cacheControl = readCacheControl((tool as Record<string, unknown>).cache_control)
    // `strict` is not forwarded: Anthropic's strict tool use exists only on Claude 4.5 and later.
    return {
      name,
      ...(typeof description === 'string' && description !== '' ? { description } : {}),
      input_schema: isRecord(parameters) ? parameters : { type: 'object', properties: {} },
      ...(cacheControl ? { cache_control: cacheControl } : {}),
    }
  })

const translateToolChoice = (choice: ToolChoice | undefined, parallel: boolean | null | undefined): ToolChoiceParam | undefined => {
  const disable = parallel === false ? { disable_parallel_tool_use: true } : {}
  if (choice === undefined || choice === 'auto') return parallel === false ? { type: 'auto', ...disable } : undefined
  if (choice === 'none') return { type: 'none' }
  if (choice === 'required') return { type: 'any', ...disable }
  if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string') return { type: 'tool', name: choice.name, ...disable }
  const kind = isRecord(choice) ? String(choice.type) : String(choice)
  throw invalid('tool_choice', `"${kind}" is not supported by ${PROVIDER}`)
}

interface ReasoningPlan {
  thinking?: ThinkingParam
  effort?: string
  maxTokens: number
  isThinking: boolean
}

/**
 * Reasoning mapping. Manual mode: `reasoning.max_tokens` (0 means off), else the effort's budget
 * (medium when only `enabled: true`), at least 1,024 and below `max_tokens`. An explicit `max_output_tokens`
 * caps the budget; at 1,024 or less no budget fits, so thinking stays off. Without one,
 * `max_tokens` is the budget plus the default, so the answer keeps its usual room. Adaptive mode:
 * `thinking: {type: 'adaptive'}` with the effort in `output_config.effort`. `effort: 'none'` or
 * `enabled: false` turns thinking off (`{type: 'disabled'}` in adaptive mode, where some models
 * think by default).
 */
const planReasoning = (request: ResponsesRequest, options: AdapterOptions): ReasoningPlan => {
  const reasoning = request.reasoning
  const explicitMax = typeof request.max_output_tokens === 'number' ? request.max_output_tokens : undefined
  const baseMax = explicitMax ?? options.defaultMaxTokens
  const budget = typeof reasoning?.max_tokens === 'number' ? reasoning.max_tokens : undefined
  const isOff = reasoning?.enabled === false || reasoning?.effort === 'none' || budget === 0
  const isOn = !!reasoning && !isOff && (reasoning.enabled === true || (reasoning.effort !== undefined && reasoning.effort !== null) || budget !== undefined)

  if (!isOn) {
    const thinking: ThinkingParam | undefined = isOff && options.thinkingMode === 'adaptive' ? { type: 'disabled' } : undefined
    return { ...(thinking ? { thinking } : {}), maxTokens: baseMax, isThinking: false }
  }
  const effort = reasoning.effort ?? undefined
  if (effort !== undefined && !(effort in EFFORT_BUDGETS)) throw invalid('reasoning.effort', `"${effort}" is not supported by ${PROVIDER}`)
  const requested = Math.max(budget ?? EFFORT_BUDGETS[effort ?? 'medium']!, MIN_THINKING_BUDGET)

  if (options.thinkingMode === 'adaptive') {
    const display = reasoning.summary ? { display: 'summarized' as const } : {}
    return {
      thinking: { type: 'adaptive', ...display },
      ...(effort ? { effort: ADAPTIVE_EFFORTS[effort]! } : {}),
      maxTokens: explicitMax ?? requested + options.defaultMaxTokens,
      isThinking: true,
    }
  }
  if (explicitMax !== undefined) {
    if (explicitMax <= MIN_THINKING_BUDGET) return { maxTokens: explicitMax, isThinking: false }
    return { thinking: { type: 'enabled', budget_tokens: Math.min(requested, explicitMax - 1) }, maxTokens: explicitMax, isThinking: true }
  }
  return { thinking: { type: 'enabled', budget_tokens: requested }, maxTokens: requested + options.defaultMaxTokens, isThinking: true }
}

/** The TTLs Anthropic's cache accepts; `prompt_cache_options.ttl` must be one of them here. */
const ANTHROPIC_CACHE_TTLS = new Set(['5m', '1h'])

/**
 * spec `cache_control`: explicit breakpoints on content parts are kept (the first four, in prompt
 * order: Anthropic allows four); a top-level one marks the last cacheable block when a slot is
 * left. Anthropic also accepts a top-level `cache_control` itself, but not on every platform that
 * serves Claude, so we place the breakpoint ourselves. `prompt_cache_options`: its `ttl` is the
 * lifetime of every breakpoint that names none, and `mode: "explicit"` places no automatic breakpoint,
 * so only the marked blocks are cached (Anthropic caches nothing it is not told to).
 */
const applyCacheControl = (request: ResponsesRequest, system: TextBlock[], messages: MessageParam[], tools: Array<ToolParam | WebSearchToolParam> | undefined) => {
  const options = isRecord(request.prompt_cache_options) ? request.prompt_cache_options : undefined
  const ttl = options?.ttl
  if (ttl !== undefined && (typeof ttl !== 'string' || !ANTHROPIC_CACHE_TTLS.has(ttl))) {
    throw invalid('prompt_cache_options.ttl', `${PROVIDER} caches for 5m or 1h, not ${JSON.stringify(ttl)}`)
  }
  let explicit = 0
  const visit = (block: { cache_control?: CacheControl }) => {
    if (!block.cache_control) return
    if (explicit >= MAX_CACHE_BREAKPOINTS) return void delete block.cache_control
    explicit++
    if (ttl && block.cache_control.ttl === undefined) block.cache_control = { ...block.cache_control, ttl }
  }
  for (const tool of tools ?? []) visit(tool)
  for (const block of system) visit(block)
  for (const message of messages) for (const block of message.content) visit(block as { cache_control?: CacheControl })

  if (options?.mode === 'explicit') return
  const requested = readCacheControl(request.cache_control)
  const automatic = requested && ttl && requested.ttl === undefined ? { ...requested, ttl } : requested
  if (!automatic || explicit >= MAX_CACHE_BREAKPOINTS) return
  let target: { cache_control?: CacheControl } | undefined
  const lastMessage = messages[messages.length - 1]
  if (lastMessage) {
    // Thinking blocks cannot carry cache_control: walk back to the nearest block that can.
    for (let index = lastMessage.content.length - 1; index >= 0 && !target; index--) {
      const block = lastMessage.content[index]!
      if (block.type !== 'thinking' && block.type !== 'redacted_thinking') target = block
    }
  } else {
    target = system[system.length - 1] ?? tools?.[tools.length - 1]
  }
  if (target && !target.cache_control) target.cache_control = automatic
}

/** Builds the `POST {baseURL}/messages` request. */
export const buildMessagesRequest = (call: UpstreamCall, target: UpstreamTarget): UpstreamRequest => {
  const request = call.request
  // Claude answers in text only; `["text"]` asks for nothing more.
  if (request.modalities?.includes('image')) throw invalid('modalities', `image output is not supported by ${PROVIDER}`)
  const options = readOptions(target.options)
  const { system, messages } = translateInput(request)

  const functionTools = request.tools && request.tools.length > 0 ? translateTools(request.tools) : []
  const allTools: Array<ToolParam | WebSearchToolParam> = call.nativeWebSearch ? [...functionTools, webSearchTool(call.nativeWebSearch)] : functionTools
  const tools = allTools.length > 0 ? allTools : undefined
  const toolChoice = tools ? translateToolChoice(request.tool_choice, request.parallel_tool_calls) : undefined

  const plan = planReasoning(request, options)
  const outputConfig: OutputConfigParam = {}
  if (plan.effort) outputConfig.effort = plan.effort

  const format = request.text?.format
  if (format?.type === 'json_schema') {
    const schema = (format as { schema?: unknown }).schema
    if (!isRecord(schema)) throw invalid('text.format.schema', 'must be a JSON Schema object')
    if (options.structuredOutputs === 'native') outputConfig.format = { type: 'json_schema', schema }
    else system.push({ type: 'text', text: `${JSON_SCHEMA_INSTRUCTION}\n\n${JSON.stringify(schema)}` })
  } else if (format?.type === 'json_object') {
    // Anthropic's JSON outputs need a schema; plain JSON mode is an instruction.
    system.push({ type: 'text', text: JSON_OBJECT_INSTRUCTION })
  }

  applyCacheControl(request, system, messages, tools)

  const body: MessagesRequestBody = { model: call.upstreamModel, max_tokens: plan.maxTokens, messages }
  if (system.length > 0) body.system = system
  if (tools) body.tools = tools
  if (toolChoice) body.tool_choice = toolChoice
  if (plan.thinking) body.thinking = plan.thinking
  if (outputConfig.effort || outputConfig.format) body.output_config = outputConfig
  // Anthropic rejects temperature and top_k while thinking, so they are dropped then.
  if (!plan.isThinking && typeof request.temperature === 'number') body.temperature = request.temperature
  if (typeof request.top_p === 'number') body.top_p = request.top_p
  // top_k 0 means "no top-k" in the Responses world; Anthropic wants it omitted.
  if (!plan.isThinking && typeof request.top_k === 'number' && request.top_k > 0) body.top_k = request.top_k
  // frequency_penalty, presence_penalty and top_logprobs have no Anthropic counterpart: not sent.
  if (call.extensions?.stop) body.stop_sequences = [...call.extensions.stop]
  if (call.endUserId) body.metadata = { user_id: call.endUserId }
  // `default` asks for the standard tier: Anthropic's own default (`auto`) would use priority capacity where bought.
  if (request.service_tier === 'default') body.service_tier = 'standard_only'
  if (call.stream) body.stream = true

  const headers: Record<string, string> = { 'content-type': 'application/json', 'anthropic-version': ANTHROPIC_VERSION }
  if (call.stream) headers.accept = 'text/event-stream'
  // Configured headers (e.g. `anthropic-beta`) win over our defaults, never over the credential.
  if (target.headers) for (const [name, value] of Object.entries(target.headers)) headers[name.toLowerCase()] = value
  headers['x-api-key'] = target.apiKey

  const baseURL = target.baseURL.endsWith('/') ? target.baseURL.slice(0, -1) : target.baseURL
  return { url: `${baseURL}/messages`, method: 'POST', headers, body: JSON.stringify(body) }
}
