/**
 * The routing rules of the guardrails governing a request: models and providers allowed or ignored, zero data
 * retention per model family, and whether endpoints that train on prompts may serve. Routing (src/engine/routing.ts)
 * never attempts an endpoint the policy refuses; when nothing is left it answers as OpenRouter does, 404.
 */

import { NotFoundError, type GatewayError } from '../../core/errors'
import type { ZdrFamily } from '../../repositories/guardrails'
import type { EndpointPolicy } from '../../engine/endpoint-policy'
import type { ModelEndpoint, ModelEntry } from '../../engine/models'
import type { AppliedGuardrail } from './applicable'
import { ruleRefusalEvent, withGuardrailRefusal } from '../../engine/refusal'

const baseSlug = (slug: string) => slug.split('/', 1)[0]!

/** A base slug matches every variant of its provider; a variant only itself (as provider preferences match). */
const matchesProvider = (endpointProvider: string, wanted: string) =>
  wanted.includes('/') ? endpointProvider === wanted : baseSlug(endpointProvider) === wanted

/** The zero-data-retention family of a model, from its author (`anthropic/…`, `openai/…`, `google/…`, `x-ai/…`). */
export const zdrFamilyOf = (model: ModelEntry): ZdrFamily => {
  const author = baseSlug(model.slug)
  if (author === 'anthropic' || author === 'openai' || author === 'google') return author
  if (author === 'x-ai' || author === 'xai') return 'xai'
  return 'other'
}

const isFree = (endpoint: ModelEndpoint) => endpoint.pricing.prompt === 0 && endpoint.pricing.completion === 0 && !endpoint.pricing.request

/** The routing rules a guardrail sets, by the field that sets each (how a refusal names them in the usage ledger). */
const routingRulesOf = ({ record }: AppliedGuardrail): string[] => [
  ...(record.allowedModels === null ? [] : ['allowed_models']),
  ...(record.ignoredModels === null ? [] : ['ignored_models']),
  ...(record.allowedProviders === null ? [] : ['allowed_providers']),
  ...(record.ignoredProviders === null ? [] : ['ignored_providers']),
  ...Object.entries(record.enforceZdr).flatMap(([family, value]) => (value === true ? [`enforce_zdr_${family}`] : [])),
  ...(record.enableFreeModelTraining === false ? ['enable_free_model_training'] : []),
  ...(record.enablePaidModelTraining === false ? ['enable_paid_model_training'] : []),
]

/** The policy of `guardrails`, or `undefined` when none of them restricts routing. */
export const endpointPolicyOf = (guardrails: readonly AppliedGuardrail[]): EndpointPolicy | undefined => {
  const restricting = guardrails.flatMap((guardrail) => {
    const rules = routingRulesOf(guardrail)
    return rules.length === 0 ? [] : [{ ...guardrail, rules }]
  })
  if (restricting.length === 0) return undefined
  const records = restricting.map((guardrail) => guardrail.record)
  const modelAllowedBy = (model: ModelEntry) => (record: (typeof records)[number]) =>
    (record.allowedModels === null || record.allowedModels.includes(model.slug)) && !record.ignoredModels?.includes(model.slug)
  const endpointAllowedBy = (endpoint: ModelEndpoint) => (record: (typeof records)[number]) =>
    (record.allowedProviders === null || record.allowedProviders.some((wanted) => matchesProvider(endpoint.provider, wanted))) &&
    !record.ignoredProviders?.some((wanted) => matchesProvider(endpoint.provider, wanted)) &&
    // Training on prompts refused: only an endpoint the catalog says collects no data may serve (unknown is excluded).
    !(endpoint.collectsData !== false && (isFree(endpoint) ? record.enableFreeModelTraining === false : record.enablePaidModelTraining === false))
  const requiresZdr = (model: ModelEntry) => {
    const family = zdrFamilyOf(model)
    return records.some((record) => record.enforceZdr[family] === true)
  }
  return {
    allowsModel: (model) => records.every(modelAllowedBy(model)),
    // ZDR is checked by routing itself, which knows BYOK keys declared ZDR may serve where the shared endpoint may not.
    allowsEndpoint: (_model, endpoint) => records.every(endpointAllowedBy(endpoint)),
    requiresZdr,
    refusal: (models) =>
      withGuardrailRefusal(
        new NotFoundError(
          `No endpoints of ${models.join(', ')} are allowed by the guardrail${records.length === 1 ? '' : 's'} ` +
            `${records.map((record) => `"${record.name}"`).join(' and ')} governing this API key (models, providers, data policy)`,
          { metadata: { error_type: 'not_found', guardrail_ids: records.map((record) => record.id) } },
        ),
        {
          // Every restricting guardrail narrowed what was left; together they left nothing.
          events: restricting.map(({ record, scope, rules }) => ruleRefusalEvent({ guardrailId: record.id, scope }, rules)),
          ...(models[0] === undefined ? {} : { requestedModel: models[0] }),
        },
      ),
  }
}
