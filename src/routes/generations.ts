/**
 * The usage ledger's read side (docs/interface.md, Generations and activity): `GET /generation` for one
 * generation in OpenRouter's shape, and `GET /activity`, per UTC day, model and endpoint, for management keys.
 * Both read only records within the ledger's retention.
 */

import { InvalidRequestError, NotFoundError } from '../core/errors'
import type { ProviderRegistry } from '../engine/providers'
import type { Caller } from '../pipeline/auth'
import { defineRoute, json } from '../pipeline/route'
import { utcDay, type GenerationRecord } from '../repositories/generations'
import { ActivityQuerySchema, GetGenerationQuerySchema } from './generations.schemas'

// Chat Completions answers carry `gen-<hex>` and Messages answers `msg_<hex>` for the response `resp_<hex>`.
const WIRE_ID_PREFIXES = ['gen-', 'msg_']

/** The ledger's key for an id as any of our APIs showed it. */
const responseIdOf = (wireId: string): string => {
  const prefix = WIRE_ID_PREFIXES.find((candidate) => wireId.startsWith(candidate))
  return prefix ? `resp_${wireId.slice(prefix.length)}` : wireId
}

/** A regular key sees its own generations; a management key every generation of its account. */
const isVisibleTo = (record: GenerationRecord, caller: Caller) =>
  record.accountId === caller.account.id && (caller.key.kind === 'management' || record.keyHash === caller.key.hash)

/**
 * With the usage ledger off (`ledger.enabled: false`) nothing was recorded, so no generation can be found; the
 * message says why, the same for every id, so it tells a prober nothing.
 */
const LEDGER_OFF = 'Generation not found: this gateway records no generations (its usage ledger is off)'

const providerNameOf = (providers: ProviderRegistry, provider: string) => providers.get(provider)?.descriptor.displayName ?? provider

/** Our endpoint id: the provider and its own id for the model (there are no endpoint UUIDs here). */
const endpointIdOf = (provider: string, endpoint: string) => `${provider}:${endpoint}`

/** OpenRouter's generation object (`@openrouter/sdk` GenerationResponseData), plus the ledger's own fields at the end. */
export const toGenerationWire = (record: GenerationRecord, wireId: string, providers: ProviderRegistry) => ({
  api_type: record.api === 'embeddings' ? 'embeddings' : 'completions',
  app_id: null,
  cache_discount: null,
  cancelled: record.status === 'cancelled',
  created_at: record.createdAt,
  data_region: record.routing.region,
  external_user: record.endUser,
  finish_reason: record.finishReason,
  generation_time: record.generationTimeMs,
  http_referer: null,
  id: wireId,
  is_byok: record.isByok,
  latency: record.latencyMs,
  model: record.model,
  moderation_latency: null,
  native_finish_reason: record.nativeFinishReason,
  native_tokens_cached: record.tokens.cached,
  native_tokens_completion: record.tokens.output,
  native_tokens_completion_images: null,
  native_tokens_prompt: record.tokens.input,
  native_tokens_reasoning: record.tokens.reasoning,
  num_fetches: null,
  num_input_audio_prompt: null,
  num_media_completion: null,
  num_media_prompt: null,
  num_search_results: null,
  origin: '',
  preset_id: record.presetId ?? null,
  provider_name: record.provider === null ? null : providerNameOf(providers, record.provider),
  provider_responses: record.attempts.map((attempt) => ({
    endpoint_id: endpointIdOf(attempt.provider, attempt.endpoint),
    is_byok: attempt.isByok,
    latency: attempt.latencyMs,
    model_permaslug: attempt.model,
    provider_name: providerNameOf(providers, attempt.provider),
    status: attempt.status,
  })),
  request_id: record.requestId,
  response_cache_source_id: record.responseCacheSourceId ?? null,
  router: null,
  service_tier: null,
  session_id: record.session,
  streamed: record.isStreamed,
  tokens_completion: record.tokens.output,
  tokens_prompt: record.tokens.input,
  total_cost: record.cost,
  upstream_id: null,
  upstream_inference_cost: record.upstreamCost,
  usage: record.cost,
  user_agent: null,
  web_search_engine: null,
  workspace_id: record.workspaceId,
  // The ledger's own fields, which OpenRouter's object has no place for.
  status: record.status,
  error_type: record.errorType,
  is_usage_estimated: record.isUsageEstimated,
  byok_fee: record.byokFee,
  time_to_first_token: record.timeToFirstTokenMs,
  trace: record.trace,
  // What the governing guardrails found or refused, by filter or rule name, never the matched text.
  guardrails: (record.guardrails ?? []).map((event) => ({
    guardrail_id: event.guardrailId,
    scope: event.scope,
    direction: event.direction,
    action: event.action,
    patterns: [...event.patterns],
    matches: event.matches,
  })),
  routing: {
    requested: record.routing.requested,
    strategy: record.routing.strategy,
    attempts: record.routing.attempts,
    endpoints_planned: record.routing.endpointsPlanned,
  },
})

export const getGeneration = defineRoute({
  method: 'GET',
  path: '/generation',
  auth: 'any',
  query: GetGenerationQuerySchema,
  async handle({ query, caller, repositories, runtime }) {
    const { ledger } = runtime
    if (!ledger) throw new NotFoundError(LEDGER_OFF)
    const record = await repositories.generations.get(responseIdOf(query.id))
    // Absent, another key's, another account's or past retention: the same answer, so ids cannot be probed.
    if (!record || !isVisibleTo(record, caller) || record.createdAt < ledger.retainedSince()) {
      throw new NotFoundError('Generation not found')
    }
    return json({ data: toGenerationWire(record, query.id, runtime.inference.providers) })
  },
})

/**
 * `GET /generation/content`: what a generation said, kept only for workspaces with private logging on
 * (docs/decisions.md, Generation content). Visible as the generation is, within the ledger's retention.
 */
export const getGenerationContent = defineRoute({
  method: 'GET',
  path: '/generation/content',
  auth: 'any',
  query: GetGenerationQuerySchema,
  async handle({ query, caller, repositories, runtime }) {
    const { ledger } = runtime
    if (!ledger) throw new NotFoundError(LEDGER_OFF)
    const id = responseIdOf(query.id)
    const record = await repositories.generations.get(id)
    if (!record || !isVisibleTo(record, caller) || record.createdAt < ledger.retainedSince()) {
      throw new NotFoundError('Generation not found')
    }
    const content = await repositories.generations.getContent(id)
    if (!content) throw new NotFoundError(
        "No content was kept for this generation: its workspace's private logging (is_observability_io_logging_enabled) was off, " +
          'its key was not among io_logging_api_key_ids, or it was not sampled (io_logging_sampling_rate)',
      )
    return json({ data: { input: content.input, output: content.output, error: content.error } })
  },
})

interface ActivityRow {
  date: string
  model: string
  model_permaslug: string
  endpoint_id: string
  provider_name: string
  workspace_id?: string
  requests: number
  prompt_tokens: number
  completion_tokens: number
  reasoning_tokens: number
  usage: number
  byok_usage_inference: number
  /** Of `requests`, those the response cache answered (docs/decisions.md, Response cache). */
  cache_hits: number
}

const round = (amount: number) => Math.round(amount * 1e12) / 1e12

export const getActivity = defineRoute({
  method: 'GET',
  path: '/activity',
  auth: 'management',
  query: ActivityQuerySchema,
  async handle({ query, caller, repositories, runtime, now }) {
    const { ledger } = runtime
    const today = utcDay(now().toISOString())
    // With the ledger off there is no retention to stay within: any day up to today is asked of, and has, no records.
    const firstDay = ledger ? utcDay(ledger.retainedSince()) : ''
    if (query.date !== undefined && (query.date < firstDay || query.date > today)) {
      throw new InvalidRequestError(
        ledger ? `query.date: must be a day within the last ${ledger.retentionDays} days` : 'query.date: must not be a day in the future',
      )
    }
    let workspaceId: string | undefined
    if (query.workspace_id !== undefined) {
      const workspace = await repositories.workspaces.findForAccount(caller.account.id, query.workspace_id)
      if (!workspace) throw new NotFoundError('Workspace not found')
      workspaceId = workspace.id
    }
    // Activity is computed from the ledger's records: with the ledger off (`ledger.enabled: false`) there are none.
    if (!ledger) return json({ data: [] })
    const retainedSince = ledger.retainedSince()
    const isByWorkspace = query.group_by === 'workspace'
    const rows = new Map<string, ActivityRow>()
    for await (const record of repositories.generations.list(caller.account.id, query.date)) {
      if (record.createdAt < retainedSince) continue
      if (query.api_key_hash !== undefined && record.keyHash !== query.api_key_hash) continue
      if (query.user_id !== undefined && record.userId !== query.user_id) continue
      if (workspaceId !== undefined && record.workspaceId !== workspaceId) continue
      const date = utcDay(record.createdAt)
      // A request no endpoint served (a guardrail refused it, every attempt failed) counts under no endpoint.
      const endpointId = record.provider !== null && record.endpoint !== null ? endpointIdOf(record.provider, record.endpoint) : ''
      const key = [date, record.model, endpointId, isByWorkspace ? record.workspaceId : ''].join('\u0000')
      let row = rows.get(key)
      if (!row) {
        row = {
          date,
          model: record.model,
          model_permaslug: record.model,
          endpoint_id: endpointId,
          provider_name: record.provider === null ? '' : providerNameOf(runtime.inference.providers, record.provider),
          ...(isByWorkspace ? { workspace_id: record.workspaceId } : {}),
          requests: 0,
          prompt_tokens: 0,
          completion_tokens: 0,
          reasoning_tokens: 0,
          usage: 0,
          byok_usage_inference: 0,
          cache_hits: 0,
        }
        rows.set(key, row)
      }
      row.requests++
      if (record.responseCacheSourceId !== undefined) row.cache_hits++
      row.prompt_tokens += record.tokens.input
      row.completion_tokens += record.tokens.output
      row.reasoning_tokens += record.tokens.reasoning
      row.usage = round(row.usage + record.cost)
      row.byok_usage_inference = round(row.byok_usage_inference + (record.isByok ? (record.upstreamCost ?? 0) : 0))
    }
    const data = [...rows.values()].sort(
      (a, b) => b.date.localeCompare(a.date) || a.model.localeCompare(b.model) || a.endpoint_id.localeCompare(b.endpoint_id) || (a.workspace_id ?? '').localeCompare(b.workspace_id ?? ''),
    )
    return json({ data })
  },
})
