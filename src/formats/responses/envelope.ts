/**
 * The Response object (spec: Response result), complete in every state: real clients read
 * `parallel_tool_calls`, `tools`, `temperature`… even on `response.created` (gaps §2).
 */

import type { BilledUsage } from '../../engine/billing'
import { MAX_TOOL_CALLS_MAX, type ResponsesRequestBody } from '../../engine/request.schemas'
import type { OutputItem } from '../../providers/types'
import { echoedServiceTier } from '../shared/service-tier'

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed'

export interface ResponseState {
  status: ResponseStatus
  output: OutputItem[]
  usage: BilledUsage | null
  error: { code: string; message: string } | null
  errorType: string | null
  incompleteDetails: { reason: string } | null
  completedAt: number | null
  serviceMetadata?: Record<string, unknown>
  /** The tier the upstream said served the answer; the one asked for is echoed without it. */
  serviceTier?: string
}

type RequestTool = NonNullable<ResponsesRequestBody['tools']>[number]

const hasStrict = (tool: RequestTool) => tool.type !== 'function' || 'strict' in tool

/** Function tools as the spec echoes them: with `strict`, null when the caller left it out. Copied only when one lacks it. */
const echoedTools = (tools: ResponsesRequestBody['tools']): RequestTool[] => {
  if (tools === undefined) return []
  return tools.every(hasStrict) ? tools : tools.map((tool) => (hasStrict(tool) ? tool : { ...tool, strict: null }))
}

export const toResponseObject = (
  base: { id: string; createdAt: number; model: string; request: ResponsesRequestBody },
  state: ResponseState,
) => {
  const { request } = base
  return {
    id: base.id,
    object: 'response' as const,
    previous_response_id: request.previous_response_id ?? null,
    created_at: base.createdAt,
    completed_at: state.completedAt,
    status: state.status,
    error: state.error,
    // Omitted, not null, without an error: OpenRouter's SDK accepts it absent or a canonical type, never null.
    ...(state.errorType === null ? {} : { error_type: state.errorType }),
    incomplete_details: state.incompleteDetails,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    // The value in force (docs/decisions.md, Server tools): the spec's default and ceiling of 30, which also bounds a
    // loop that stop conditions rule (they override the caller's own value).
    max_tool_calls: request.stop_server_tools_when ? MAX_TOOL_CALLS_MAX : (request.max_tool_calls ?? MAX_TOOL_CALLS_MAX),
    metadata: request.metadata ?? {},
    model: base.model,
    output: state.output,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    // The value used, or the default in force (docs/decisions.md, Open Responses): the schema wants numbers.
    temperature: request.temperature ?? 1,
    top_p: request.top_p ?? 1,
    presence_penalty: request.presence_penalty ?? 0,
    frequency_penalty: request.frequency_penalty ?? 0,
    top_logprobs: request.top_logprobs ?? 0,
    tool_choice: request.tool_choice ?? 'auto',
    tools: echoedTools(request.tools),
    prompt: request.prompt ?? null,
    prompt_cache_key: request.prompt_cache_key ?? null,
    prompt_cache_options: request.prompt_cache_options ?? null,
    reasoning: request.reasoning ?? null,
    safety_identifier: request.safety_identifier ?? null,
    service_tier: echoedServiceTier(state, request.service_tier),
    store: request.store ?? false,
    background: request.background === true,
    text: request.text ?? { format: { type: 'text' } },
    truncation: request.truncation ?? 'disabled',
    user: request.user ?? null,
    usage: state.usage,
    ...(state.serviceMetadata ? { service_metadata: state.serviceMetadata } : {}),
  }
}
