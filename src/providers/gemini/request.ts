/**
 * A validated Responses request → `POST {baseURL}/models/{model}:generateContent` (or
 * `:streamGenerateContent?alt=sse`), authenticated with `x-goog-api-key`.
 *
 * - Tools: function tools → one `functionDeclarations` tool. Parameters go in
 *   `parametersJsonSchema`, which takes standard JSON Schema (`additionalProperties`, `$ref`,
 *   `anyOf`…) on the current API, so schemas pass unchanged; the older `parameters` field accepts
 *   only an OpenAPI subset. `strict` has no Gemini equivalent and is dropped; so is
 *   `parallel_tool_calls` (Gemini decides). Server tools are refused.
 * - `tool_choice`: auto → AUTO, none → NONE, required → ANY, a named function → ANY with
 *   `allowedFunctionNames`; `allowed_tools` → ANY with the names (required), or AUTO over only the
 *   allowed declarations (auto), since Gemini takes `allowedFunctionNames` with ANY only.
 * - `text.format`: json_object → `responseMimeType: application/json`; json_schema → the same plus
 *   `responseJsonSchema` (standard JSON Schema, as for tools).
 * - `modalities` and `image_config` → `responseModalities` and `imageConfig` (image.ts).
 * - Not sent: the end-user id (Gemini has no such field), `metadata`, `service_tier`,
 *   `prompt_cache_key` and `cache_control` (Gemini caches repeated prefixes implicitly; explicit
 *   caching needs a `cachedContents` resource), `top_logprobs`, `text.verbosity`.
 * - Extensions: `stop` → `generationConfig.stopSequences`, `seed` → `generationConfig.seed`. Gemini's
 *   finish reason `STOP` does not say whether a stop sequence ended the answer, nor which.
 */

import { InvalidRequestError } from '../../core/errors'
import type { FunctionTool, ResponsesRequest, TextFormat, Tool } from '../types'
import type { UpstreamCall, UpstreamRequest, UpstreamTarget } from '../contract'
import { applyImageOutput } from './image'
import { translateInput } from './input'
import { thinkingConfig } from './thinking'
import type { GeminiFunctionDeclaration, GeminiGenerationConfig, GeminiRequestBody } from './wire'

type ToolConfig = NonNullable<GeminiRequestBody['toolConfig']>

const declaration = (tool: FunctionTool): GeminiFunctionDeclaration => ({
  name: tool.name,
  ...(typeof tool.description === 'string' && tool.description !== '' ? { description: tool.description } : {}),
  ...(tool.parameters ? { parametersJsonSchema: tool.parameters } : {}),
})

const functionTools = (tools: Tool[] | undefined): FunctionTool[] => {
  const functions: FunctionTool[] = []
  for (const [index, tool] of (tools ?? []).entries()) {
    if (tool.type !== 'function') throw new InvalidRequestError(`tools[${index}]: tool type "${tool.type}" is not supported by Gemini`)
    functions.push(tool as FunctionTool)
  }
  return functions
}

const allowedNames = (choice: Record<string, unknown>): string[] => {
  const tools = Array.isArray(choice.tools) ? (choice.tools as Array<Record<string, unknown>>) : []
  const names: string[] = []
  for (const [index, tool] of tools.entries()) {
    if (tool.type !== 'function' || typeof tool.name !== 'string') {
      throw new InvalidRequestError(`tool_choice.tools[${index}]: only function tools are supported by Gemini`)
    }
    names.push(tool.name)
  }
  return names
}

/** Returns the tool config and, for `allowed_tools` in auto mode, the names to keep. */
const toolChoice = (choice: ResponsesRequest['tool_choice']): { config?: ToolConfig; keep?: Set<string> } => {
  if (choice === undefined || choice === null) return {}
  if (choice === 'auto') return { config: { functionCallingConfig: { mode: 'AUTO' } } }
  if (choice === 'none') return { config: { functionCallingConfig: { mode: 'NONE' } } }
  if (choice === 'required') return { config: { functionCallingConfig: { mode: 'ANY' } } }
  if (typeof choice === 'object' && choice.type === 'function' && typeof choice.name === 'string') {
    return { config: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.name] } } }
  }
  if (typeof choice === 'object' && choice.type === 'allowed_tools') {
    const names = allowedNames(choice)
    if (choice.mode === 'required') return { config: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: names } } }
    return { config: { functionCallingConfig: { mode: 'AUTO' } }, keep: new Set(names) }
  }
  const type = typeof choice === 'object' ? String(choice.type) : String(choice)
  throw new InvalidRequestError(`tool_choice: "${type}" is not supported by Gemini`)
}

const responseFormat = (format: TextFormat | undefined, config: GeminiGenerationConfig) => {
  if (!format || format.type === 'text') return
  if (format.type === 'json_object') {
    config.responseMimeType = 'application/json'
    return
  }
  if (format.type === 'json_schema') {
    config.responseMimeType = 'application/json'
    config.responseJsonSchema = (format as Extract<TextFormat, { type: 'json_schema' }>).schema
    return
  }
  throw new InvalidRequestError(`text.format: type "${String((format as { type: unknown }).type)}" is not supported by Gemini`)
}

const generationConfig = (call: UpstreamCall): GeminiGenerationConfig | undefined => {
  const { request, upstreamModel: model, extensions } = call
  const config: GeminiGenerationConfig = {}
  if (typeof request.temperature === 'number') config.temperature = request.temperature
  if (typeof request.top_p === 'number') config.topP = request.top_p
  if (typeof request.top_k === 'number') config.topK = request.top_k
  if (typeof request.max_output_tokens === 'number') config.maxOutputTokens = request.max_output_tokens
  if (typeof request.presence_penalty === 'number') config.presencePenalty = request.presence_penalty
  if (typeof request.frequency_penalty === 'number') config.frequencyPenalty = request.frequency_penalty
  if (extensions?.stop) config.stopSequences = [...extensions.stop]
  if (extensions?.seed !== undefined) config.seed = extensions.seed
  responseFormat(request.text?.format, config)
  const thinking = thinkingConfig(request.reasoning, model)
  if (thinking) config.thinkingConfig = thinking
  applyImageOutput(request, config)
  return Object.keys(config).length > 0 ? config : undefined
}

export const buildGeminiBody = (call: UpstreamCall): GeminiRequestBody => {
  const { request, upstreamModel } = call
  const { systemInstruction, contents } = translateInput(request, upstreamModel)
  const body: GeminiRequestBody = { contents }
  if (systemInstruction.length > 0) body.systemInstruction = { parts: systemInstruction }

  const functions = functionTools(request.tools)
  if (functions.length > 0) {
    const { config, keep } = toolChoice(request.tool_choice)
    const kept = keep ? functions.filter((tool) => keep.has(tool.name)) : functions
    if (kept.length > 0) {
      body.tools = [{ functionDeclarations: kept.map(declaration) }]
      if (config) body.toolConfig = config
    }
  }

  // The native web search: Google Search grounding, which takes no settings (index.ts declares none).
  if (call.nativeWebSearch) body.tools = [...(body.tools ?? []), { google_search: {} }]

  const config = generationConfig(call)
  if (config) body.generationConfig = config
  return body
}

/** `models/<id>` unless the id is already a resource path (`tunedModels/…`, `models/…`). */
const modelPath = (model: string) => (model.includes('/') ? model : `models/${model}`)

export const buildGeminiRequest = (call: UpstreamCall, target: UpstreamTarget): UpstreamRequest => {
  const base = target.baseURL.endsWith('/') ? target.baseURL.slice(0, -1) : target.baseURL
  const method = call.stream ? 'streamGenerateContent?alt=sse' : 'generateContent'
  return {
    url: `${base}/${modelPath(call.upstreamModel)}:${method}`,
    method: 'POST',
    headers: {
      ...target.headers,
      'content-type': 'application/json',
      // Never logged: the provider credential.
      'x-goog-api-key': target.apiKey,
      ...(call.stream ? { accept: 'text/event-stream' } : {}),
    },
    body: JSON.stringify(buildGeminiBody(call)),
  }
}
