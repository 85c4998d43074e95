/**
 * Embeddings (`POST /embeddings`): planned like any request (the catalog's embedding models, provider
 * preferences, BYOK keys, fallbacks), held to the caller's limits (spend reserved before, settled after),
 * priced at the serving endpoint's input price and recorded in the usage ledger like a generation.
 */

import { AuthenticationError, InvalidRequestError } from '../core/errors'
import type { EmbeddingsCall } from '../providers/contract'
import { emptyUsage } from '../providers/types'
import { readJsonBody } from './attempts'
import { billAttempt, type BilledUsage } from './billing'
import { endUserIdFor } from './end-user'
import { clientError, firstServedAttempt, servedBy as toServedBy } from './fallback'
import { performanceKeyOf } from './attempt-health'
import { createRequestDeadline } from './request-deadline'
import type { InferenceRequest } from './request'
import type { ProviderPreferences, ResponsesRequestBody } from './request.schemas'
import { newResponseId, nowSeconds } from './response-identity'
import { loadCallerScope } from './caller-scope'
import { routingBalancing } from './set-aside'
import { planAttempts } from './routing'
import { WORKSPACE_GONE, type RunContext } from './run'
import type { InferenceService } from './service'
import type { ServedBy, WholeAnswer } from './session-events'
import { reserveSpend } from './spend'

/** A validated embeddings request, its input already a list (route schemas decide the wire). */
export interface EmbeddingsRequestBody {
  model: string
  /** Texts, or token id arrays (only endpoints that list `token_input` take those). */
  input: string[] | number[][]
  dimensions?: number
  /** What the vectors are for; only endpoints that list `input_type` take it. */
  input_type?: string
  user?: string
  provider?: ProviderPreferences | null
  session_id?: string
  trace?: Record<string, unknown>
}

export interface PreparedEmbeddings {
  /** The request as the fallback loop, spend checks and ledger know requests. */
  request: InferenceRequest
  call: Omit<EmbeddingsCall, 'upstreamModel'>
}

export interface EmbeddingsAnswer {
  /** The generation as the ledger records it (no output items: vectors are not kept). */
  answer: WholeAnswer
  /** One vector per input item, in input order. */
  embeddings: number[][]
  usage: BilledUsage
  servedBy: ServedBy
}

// OpenAI's rule of thumb for English text, as the ledger's estimates use: about four characters per token.
const CHARACTERS_PER_TOKEN = 4

/** Input tokens when the upstream reports none: token ids count themselves, text about one per four characters. */
const estimateInputTokens = (input: EmbeddingsRequestBody['input']): number =>
  (input as readonly (string | number[])[]).reduce((sum, item) => sum + (typeof item === 'string' ? Math.ceil(item.length / CHARACTERS_PER_TOKEN) : item.length), 0)

const isTokenInput = (input: EmbeddingsRequestBody['input']) => input.length > 0 && typeof input[0] !== 'string'

/** An embedding writes no tokens, so no endpoint has a throughput to sort or filter on: a 400 naming what asked for it. */
const refuseThroughput = (provider: EmbeddingsRequestBody['provider']) => {
  const sort = provider?.sort === undefined ? undefined : typeof provider.sort === 'string' ? provider.sort : provider.sort.by
  const field = sort === 'throughput' ? 'provider.sort' : provider?.preferred_min_throughput !== undefined ? 'provider.preferred_min_throughput' : undefined
  if (field) throw new InvalidRequestError(`${field}: embeddings write no output tokens, so they have no throughput; sort by latency or price`)
}

/** Plans an embeddings request for the caller's workspace; 400 for a model that is not an embedding model. */
export const prepareEmbeddings = async (service: InferenceService, context: RunContext, body: EmbeddingsRequestBody): Promise<PreparedEmbeddings> => {
  const { caller, repositories, requestId } = context
  // The features' scope holds embeddings to what it holds any request to: the guardrails' models, providers and
  // budgets (docs/decisions.md, Guardrails).
  const { workspace, credentials, policy, budgets } = await loadCallerScope(repositories, caller, service.stages.plan.loadScope)
  if (!workspace) throw new AuthenticationError(WORKSPACE_GONE)
  // Parameters only some endpoints take: never dropped silently, so an endpoint must list each one used.
  const mustHonour = [
    ...(body.dimensions === undefined ? [] : [{ name: 'dimensions', field: 'body.dimensions' }]),
    ...(body.input_type === undefined ? [] : [{ name: 'input_type', field: 'body.input_type' }]),
    ...(isTokenInput(body.input) ? [{ name: 'token_input', field: 'body.input (token ids)' }] : []),
  ]
  refuseThroughput(body.provider)
  const attempts = planAttempts(service.models, service.providers, {
    models: [body.model],
    preferences: body.provider,
    parametersUsed: mustHonour.map(({ name }) => name),
    mustHonour,
    purpose: 'embeddings',
    credentials,
    callerKeyHash: caller.key.hash,
    callerUserId: caller.key.creatorUserId,
    policy,
    // Embedding endpoints are measured by their latency (they write no tokens): the latency sort and preference act.
    performance: service.performance,
    // A workspace's throughput default has nothing to sort embeddings by: they keep price order.
    ...(workspace.defaultProviderSort === 'throughput' ? {} : { defaultSort: workspace.defaultProviderSort }),
    balancing: routingBalancing(service),
  })
  const endUserId = await endUserIdFor(service.endUserSecret, caller.account.id, body.user)
  // The fields the spend estimate and the ledger read; nothing here is sent upstream.
  const recorded = {
    model: body.model,
    input: body.input,
    max_output_tokens: 0,
    stream: false,
    ...(body.user === undefined ? {} : { user: body.user }),
    ...(body.trace === undefined ? {} : { trace: body.trace }),
  } as unknown as ResponsesRequestBody
  return {
    request: {
      body: recorded,
      attempts,
      requestedModel: body.model,
      endUserId,
      requestId,
      signal: context.signal,
      deadline: createRequestDeadline(service.requestTimeoutMs),
      isMetadataRequested: false,
      spend: { key: caller.key, workspace, account: caller.account, ...(budgets ? { guardrailBudgets: budgets } : {}) },
      attemptReports: [],
      isBatchPrompt: true,
      pipeline: [],
    },
    call: {
      input: body.input,
      ...(body.dimensions === undefined ? {} : { dimensions: body.dimensions }),
      ...(body.input_type === undefined ? {} : { inputType: body.input_type }),
      ...(body.user === undefined ? {} : { endUserId }),
    },
  }
}

/** Runs a prepared embeddings request: spend reserved, attempts in order until one answers, spend settled. */
export const runEmbeddings = async (service: InferenceService, prepared: PreparedEmbeddings): Promise<EmbeddingsAnswer> => {
  const { request } = prepared
  const reservation = await reserveSpend(service, request)
  try {
    const answer = await answerEmbeddings(service, prepared)
    reservation.settle(answer.usage)
    return answer
  } catch (error) {
    reservation.settle(null)
    throw error
  }
}

/**
 * Embeds texts for the gateway's own use (the response cache's semantic lookup): `model` on the operator's shared keys,
 * through the attempts and fallbacks `POST /embeddings` uses, within `request`'s deadline and signal. Nothing is
 * reserved, charged or recorded for the caller, who asked for no embedding (docs/decisions.md, Response cache).
 */
export const embedForGateway = async (service: InferenceService, request: InferenceRequest, model: string, input: string[]): Promise<number[][]> => {
  const attempts = planAttempts(service.models, service.providers, {
    models: [model],
    preferences: undefined,
    parametersUsed: [],
    purpose: 'embeddings',
    credentials: [],
    callerKeyHash: request.spend.key.hash,
    callerUserId: request.spend.key.creatorUserId,
  })
  const embedding: InferenceRequest = {
    body: { model, input, max_output_tokens: 0, stream: false } as unknown as ResponsesRequestBody,
    attempts,
    requestedModel: model,
    endUserId: request.endUserId,
    requestId: request.requestId,
    signal: request.signal,
    deadline: request.deadline,
    isMetadataRequested: false,
    spend: request.spend,
    attemptReports: [],
    isBatchPrompt: true,
    pipeline: [],
  }
  return (await answerEmbeddings(service, { request: embedding, call: { input } })).embeddings
}

/** One exchange for a batch the serving adapter takes whole: the fallback loop's answer, or the client's error. */
const embedBatch = async (service: InferenceService, request: InferenceRequest, call: PreparedEmbeddings['call']) => {
  const outcome = await firstServedAttempt(
    service,
    request,
    request,
    false,
    async (opened, _call, attempt, attemptStarted) => {
      const body = await readJsonBody(opened.response, service.limits.maxResponseBytes)
      const upstreamMs = performance.now() - attemptStarted
      opened.release()
      // Translated inside the attempt, so a malformed answer still falls back to the next endpoint.
      return { result: attempt.provider.adapter.embeddings!.readResult(body, { ...call, upstreamModel: attempt.endpoint.model }), upstreamMs }
    },
    (attempt, target) => attempt.provider.adapter.embeddings!.buildRequest({ ...call, upstreamModel: attempt.endpoint.model }, target),
  )
  if (!outcome.isServed) throw clientError(outcome.failure, outcome.attempt, service)
  const { result, upstreamMs } = outcome.value
  service.performance.record(performanceKeyOf(outcome.served.attempt), { latencyMs: upstreamMs })
  const usage = emptyUsage()
  usage.input_tokens = result.inputTokens ?? estimateInputTokens(call.input as EmbeddingsRequestBody['input'])
  usage.total_tokens = usage.input_tokens
  return {
    embeddings: result.embeddings,
    isUsageEstimated: result.inputTokens === undefined,
    usage: billAttempt(usage, outcome.served.attempt, service.byokFeeRate, []),
    served: outcome.served,
    upstreamMs,
  }
}

const round = (amount: number) => Math.round(amount * 1e12) / 1e12

/** Two batches' priced usage as one. */
const addUsage = (total: BilledUsage, more: BilledUsage): BilledUsage => {
  const upstream = [total.cost_details.upstream_inference_cost, more.cost_details.upstream_inference_cost].filter((cost): cost is number => cost !== null)
  return {
    ...total,
    input_tokens: total.input_tokens + more.input_tokens,
    total_tokens: total.total_tokens + more.total_tokens,
    cost: round(total.cost + more.cost),
    is_byok: total.is_byok || more.is_byok,
    cost_details: {
      upstream_inference_cost: upstream.length === 0 ? null : round(upstream.reduce((sum, cost) => sum + cost, 0)),
      upstream_inference_input_cost: round(total.cost_details.upstream_inference_input_cost + more.cost_details.upstream_inference_input_cost),
      upstream_inference_output_cost: round(total.cost_details.upstream_inference_output_cost + more.cost_details.upstream_inference_output_cost),
    },
  }
}

/**
 * The input in batches every planned adapter takes (Gemini's at most 100 items per call), one after the other,
 * each with its own fallback loop; the vectors come back in input order and the usage adds up.
 */
const batchesOf = (request: InferenceRequest, input: EmbeddingsCall['input']): Array<EmbeddingsCall['input']> => {
  const size = Math.min(...request.attempts.map((attempt) => attempt.provider.adapter.embeddings?.maxInputsPerCall ?? Infinity))
  if (!Number.isFinite(size) || input.length <= size) return [input]
  const batches: Array<EmbeddingsCall['input']> = []
  for (let offset = 0; offset < input.length; offset += size) batches.push(input.slice(offset, offset + size) as EmbeddingsCall['input'])
  return batches
}

const answerEmbeddings = async (service: InferenceService, { request, call }: PreparedEmbeddings): Promise<EmbeddingsAnswer> => {
  const startedAt = performance.now()
  const createdAt = nowSeconds(service)
  const embeddings: number[][] = []
  let usage: BilledUsage | undefined
  let isUsageEstimated = false
  let upstreamMs = 0
  let last: Awaited<ReturnType<typeof embedBatch>> | undefined
  for (const input of batchesOf(request, call.input)) {
    last = await embedBatch(service, request, { ...call, input })
    embeddings.push(...last.embeddings)
    usage = usage ? addUsage(usage, last.usage) : last.usage
    isUsageEstimated ||= last.isUsageEstimated
    upstreamMs += last.upstreamMs
  }
  const servedBy = toServedBy(last!.served)
  return {
    answer: {
      request: request.body,
      result: {
        id: newResponseId(),
        createdAt,
        completedAt: nowSeconds(service),
        model: last!.served.attempt.model.slug,
        status: 'completed',
        output: [],
        usage: usage!,
        ...(isUsageEstimated ? { isUsageEstimated } : {}),
        error: null,
        incompleteDetails: null,
        servedBy,
      },
      overheadMs: performance.now() - startedAt - upstreamMs,
    },
    embeddings,
    usage: usage!,
    servedBy,
  }
}
