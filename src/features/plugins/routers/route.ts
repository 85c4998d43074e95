/**
 * The router models (docs/decisions.md, "Plugins: routers and fusion"): `service/auto` (plugin `auto-router`),
 * `service/auto-beta` (`auto-beta-router`), `service/switchyard` (`switchyard-router`, which routes as the
 * auto-router does) and `service/pareto-code` (`pareto-router`). A request for one of them gets concrete models
 * in its place, the primary first and fallbacks after, before ordinary routing plans their endpoints. Each slug
 * reads only its own plugin; a router plugin on a request for another model is refused, never ignored.
 */

import { InvalidRequestError, NotFoundError } from '../../../core/errors'
import type { ByokRecord } from '../../../repositories/byok-credentials'
import type { PipelineStage } from '../../../engine/pipeline-stage'
import type { ResponsesRequestBody } from '../../../engine/request.schemas'
import type { InferenceService } from '../../../engine/service'
import { rankForTask, DEFAULT_COST_TIER, ROUTED_MODELS_MAX } from './auto-ranking'
import { routableModels, type Candidate } from './candidates'
import { DEFAULT_MIN_CODING_SCORE, paretoPrice, rankPareto } from './pareto-ranking'
import { createModelFilter } from './patterns'
import type { AutoBetaRouterPlugin, AutoRouterPlugin, ParetoRouterPlugin, SwitchyardRouterPlugin } from './schemas'
import { stickyKey } from './sticky'
import { classifyTask, type TaskNeeds } from './task'


/** What a router decided: the models to try in order and how to report it. */
export interface RouterDecision {
  /** The router slug the caller asked for (`service_metadata.requested`). */
  requested: string
  models: string[]
  /** `service_metadata.strategy`, as OpenRouter defines them. */
  strategy: 'auto' | 'pareto'
  stage: PipelineStage
}

type RouterPluginId = 'auto-router' | 'auto-beta-router' | 'switchyard-router' | 'pareto-router'

export const ROUTER_SLUGS: Readonly<Record<string, RouterPluginId>> = {
  'service/auto': 'auto-router',
  'service/auto-beta': 'auto-beta-router',
  'service/switchyard': 'switchyard-router',
  'service/pareto-code': 'pareto-router',
}

const SLUG_OF: Readonly<Record<RouterPluginId, string>> = Object.fromEntries(Object.entries(ROUTER_SLUGS).map(([slug, id]) => [id, slug])) as Record<RouterPluginId, string>

export const isRouterSlug = (slug: string | undefined): slug is string => slug !== undefined && Object.hasOwn(ROUTER_SLUGS, slug)

type AnyRouterPlugin = AutoRouterPlugin | AutoBetaRouterPlugin | ParetoRouterPlugin | SwitchyardRouterPlugin

const isRouterPlugin = (plugin: { id: string }): plugin is AnyRouterPlugin => Object.hasOwn(SLUG_OF, plugin.id)

export interface RouterContext {
  workspaceId: string
  sessionId: string | undefined
  /** The workspace's BYOK credentials: their providers are reachable too. */
  credentials: readonly ByokRecord[]
}

/**
 * Refuses router plugins that would have no effect (on a request for another model, or named twice) and router
 * slugs among the fallback `models`; returns the requested router plugin's settings (`undefined` when absent).
 */
const checkRouterPlugins = (body: ResponsesRequestBody, requested: string | undefined): AnyRouterPlugin | undefined => {
  const seen = new Set<string>()
  let settings: AnyRouterPlugin | undefined
  body.plugins?.forEach((plugin, index) => {
    if (!isRouterPlugin(plugin)) return
    if (seen.has(plugin.id)) throw new InvalidRequestError(`body.plugins.${index}: the "${plugin.id}" plugin is listed more than once`)
    seen.add(plugin.id)
    // A disabled plugin asks for nothing: the router runs with its defaults.
    if (plugin.enabled === false) return
    const slug = SLUG_OF[plugin.id]
    if (requested !== slug) {
      throw new InvalidRequestError(`body.plugins.${index}: the "${plugin.id}" plugin configures the model "${slug}"; set model to "${slug}" or leave the plugin out`)
    }
    settings = plugin
  })
  body.models?.forEach((slug, index) => {
    if (isRouterSlug(slug) && slug !== requested) throw new InvalidRequestError(`body.models.${index}: "${slug}" is a router; name it in model, not among the fallbacks`)
  })
  return settings
}

const meetsNeeds = (needs: TaskNeeds, modalities: readonly string[] | undefined) => (candidate: Candidate) =>
  (!needs.hasImages || candidate.readsImages) &&
  (!needs.hasTools || candidate.takesTools) &&
  candidate.contextLength >= needs.promptTokens &&
  (modalities ?? []).every((modality) => (candidate.entry.outputModalities ?? ['text']).some((output) => output === modality))

const noCandidate = (requested: string, why: string) =>
  new NotFoundError(`No model available to ${requested} for this request: ${why}`, { metadata: { error_type: 'not_found' } })

/** The model of the last assistant message in the input that names one (`pin_model`). */
const pinnedModel = (body: ResponsesRequestBody): string | undefined => {
  if (typeof body.input === 'string' || !body.input) return undefined
  for (let index = body.input.length - 1; index >= 0; index -= 1) {
    const item = body.input[index] as { role?: unknown; model?: unknown }
    if (item.role === 'assistant' && typeof item.model === 'string') return item.model
  }
  return undefined
}

const withFallbacks = (chosen: readonly string[], body: ResponsesRequestBody, requested: string) => [
  ...new Set([...chosen, ...(body.models ?? []).filter((slug) => slug !== requested)]),
]

const autoRoute = (
  service: InferenceService,
  body: ResponsesRequestBody,
  context: RouterContext,
  requested: string,
  id: 'auto-router' | 'auto-beta-router' | 'switchyard-router',
  plugin: Partial<AutoRouterPlugin> | undefined,
  candidates: Candidate[],
): RouterDecision => {
  const { taskType, needs } = classifyTask(body)
  const tier = plugin?.cost_tier ?? DEFAULT_COST_TIER
  const isAllowed = createModelFilter(plugin?.allowed_models, plugin?.excluded_models)
  const eligible = candidates.filter((candidate) => isAllowed(candidate.slug)).filter(meetsNeeds(needs, body.modalities))
  if (eligible.length === 0) {
    throw noCandidate(requested, 'no reachable model passes allowed_models and excluded_models and reads this input (images, tools, context length)')
  }
  const isEligible = (slug: string | undefined) => slug !== undefined && eligible.some((candidate) => candidate.slug === slug)
  const ranked = rankForTask(eligible, taskType, tier, service.routers.codingScores).map((candidate) => candidate.slug)
  const data: Record<string, unknown> = { task_type: taskType, cost_tier: tier }
  let chosen = ranked.slice(0, ROUTED_MODELS_MAX)

  const pinned = plugin?.pin_model === true ? pinnedModel(body) : undefined
  const key = context.sessionId === undefined ? undefined : stickyKey(context.workspaceId, id, context.sessionId)
  const sticky = key === undefined ? undefined : service.routers.sticky.get(key)
  if (isEligible(pinned)) {
    chosen = [pinned!, ...ranked.filter((slug) => slug !== pinned)].slice(0, ROUTED_MODELS_MAX)
    data.is_pinned = true
  } else if (sticky !== undefined && isEligible(sticky[0])) {
    // The session's earlier choice holds while it can still read this request.
    chosen = sticky.filter(isEligible)
    data.is_sticky = true
  }
  if (key !== undefined) service.routers.sticky.set(key, chosen)
  data.model = chosen[0]
  data.models = chosen
  return {
    requested,
    models: withFallbacks(chosen, body, requested),
    strategy: 'auto',
    stage: { type: 'router', name: id, summary: `${taskType} task routed to ${chosen[0]} (cost tier ${tier})`, data },
  }
}

const paretoRoute = (service: InferenceService, body: ResponsesRequestBody, requested: string, plugin: Partial<ParetoRouterPlugin> | undefined, candidates: Candidate[]): RouterDecision => {
  const { needs } = classifyTask(body)
  const scores = service.routers.codingScores
  const ranked = rankPareto(candidates.filter(meetsNeeds(needs, body.modalities)), plugin ?? {}, scores)
  const minimum = plugin?.min_coding_score ?? DEFAULT_MIN_CODING_SCORE
  if (ranked.length === 0) {
    const price = plugin?.max_price === undefined ? '' : ` at most $${plugin.max_price} per million ${plugin.price_source === 'weighted_avg' ? 'tokens (weighted average)' : 'input tokens'}`
    throw noCandidate(requested, `no reachable model has a coding score of at least ${minimum}${price}`)
  }
  const chosen = ranked.slice(0, ROUTED_MODELS_MAX)
  const primary = chosen[0]!
  return {
    requested,
    models: withFallbacks(
      chosen.map((candidate) => candidate.slug),
      body,
      requested,
    ),
    strategy: 'pareto',
    stage: {
      type: 'router',
      name: 'pareto-router',
      summary: `${primary.slug}: coding score ${scores[primary.slug]} at $${paretoPrice(primary, plugin?.price_source)} per million tokens`,
      data: {
        model: primary.slug,
        models: chosen.map((candidate) => candidate.slug),
        coding_score: scores[primary.slug],
        min_coding_score: minimum,
        price_source: plugin?.price_source ?? 'prompt',
        ...(plugin?.max_price === undefined ? {} : { max_price: plugin.max_price }),
      },
    },
  }
}

/**
 * The router's decision when the request's model is a router slug; `undefined` for any other model. Throws 400
 * for a router plugin that could have no effect, 404 when no reachable model fits.
 */
export const routeWithPlugins = (service: InferenceService, body: ResponsesRequestBody, context: RouterContext): RouterDecision | undefined => {
  const requested = body.model ?? body.models?.[0]
  const plugin = checkRouterPlugins(body, requested)
  if (!isRouterSlug(requested)) return undefined
  const id = ROUTER_SLUGS[requested]!
  const candidates = routableModels(service, context.credentials)
  if (id === 'pareto-router') return paretoRoute(service, body, requested, plugin as ParetoRouterPlugin | undefined, candidates)
  return autoRoute(service, body, context, requested, id, plugin as Partial<AutoRouterPlugin> | undefined, candidates)
}
