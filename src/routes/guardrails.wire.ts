/**
 * Guardrails on the wire, as `@openrouter/sdk` validates them (its `Guardrail` and `KeyAssignment` schemas), and
 * the rules a create or update body writes.
 */

import { InvalidRequestError } from '../core/errors'
import { fromNano, toNano } from '../core/money'
import type { ApiKeyRecord } from '../repositories/api-keys'
import { ZDR_FAMILIES, type GuardrailKeyAssignment, type GuardrailMemberAssignment, type GuardrailRecord, type GuardrailRules, type ZdrFamily } from '../repositories/guardrails'
import type { UpdateGuardrailBody } from './guardrails.schemas'

/** The deprecated `enforce_zdr`: true or false when every family agrees, `null` otherwise. */
const enforceZdrSummary = (enforceZdr: GuardrailRules['enforceZdr']) => {
  const values = ZDR_FAMILIES.map((family) => enforceZdr[family])
  return values.every((value) => value === values[0]) ? values[0]! : null
}

export const toGuardrailWire = (guardrail: GuardrailRecord) => ({
  id: guardrail.id,
  name: guardrail.name,
  description: guardrail.description,
  workspace_id: guardrail.workspaceId,
  allowed_models: guardrail.allowedModels,
  ignored_models: guardrail.ignoredModels,
  allowed_providers: guardrail.allowedProviders,
  ignored_providers: guardrail.ignoredProviders,
  allowed_data_regions: null,
  enforce_zdr: enforceZdrSummary(guardrail.enforceZdr),
  enforce_zdr_anthropic: guardrail.enforceZdr.anthropic,
  enforce_zdr_openai: guardrail.enforceZdr.openai,
  enforce_zdr_google: guardrail.enforceZdr.google,
  enforce_zdr_xai: guardrail.enforceZdr.xai,
  enforce_zdr_other: guardrail.enforceZdr.other,
  enable_free_model_training: guardrail.enableFreeModelTraining,
  enable_paid_model_training: guardrail.enablePaidModelTraining,
  enable_free_model_publication: null,
  limit_usd: guardrail.limitNano === null ? null : fromNano(guardrail.limitNano),
  reset_interval: guardrail.resetInterval,
  include_byok_in_budgets: guardrail.includeByokInBudgets,
  content_filters: guardrail.contentFilters?.map((filter) => ({ pattern: filter.pattern, action: filter.action, label: filter.label })) ?? null,
  // The SDK reads `label` and `scan_scope` as optional strings, never null: left out when unset.
  content_filter_builtins:
    guardrail.contentFilterBuiltins?.map((entry) => ({
      slug: entry.slug,
      action: entry.action,
      ...(entry.label === null ? {} : { label: entry.label }),
      ...(entry.scanScope === null ? {} : { scan_scope: entry.scanScope }),
    })) ?? null,
  created_at: guardrail.createdAt,
  updated_at: guardrail.updatedAt,
})

export const toKeyAssignmentWire = (assignment: GuardrailKeyAssignment, key: ApiKeyRecord | null) => ({
  id: assignment.id,
  key_hash: assignment.keyHash,
  guardrail_id: assignment.guardrailId,
  key_name: key?.name ?? '',
  key_label: key?.label ?? '',
  assigned_by: assignment.assignedBy,
  created_at: assignment.createdAt,
})

/** OpenRouter's member assignment; the account stands for the organization. */
export const toMemberAssignmentWire = (assignment: GuardrailMemberAssignment) => ({
  id: assignment.id,
  user_id: assignment.userId,
  organization_id: assignment.accountId,
  guardrail_id: assignment.guardrailId,
  assigned_by: assignment.assignedBy,
  created_at: assignment.createdAt,
})

const ZDR_FIELDS: Record<ZdrFamily, keyof UpdateGuardrailBody> = {
  anthropic: 'enforce_zdr_anthropic',
  openai: 'enforce_zdr_openai',
  google: 'enforce_zdr_google',
  xai: 'enforce_zdr_xai',
  other: 'enforce_zdr_other',
}

/**
 * `current` with what `body` changes: omitted fields stay, `null` clears, lists are replaced whole (OpenRouter's
 * replace semantics). The deprecated `enforce_zdr` fills the families the body does not name.
 */
export const applyGuardrailBody = <T extends GuardrailRules & { name: string; description: string | null }>(current: T, body: UpdateGuardrailBody): T => {
  const limitNano = body.limit_usd === undefined ? current.limitNano : body.limit_usd === null ? null : toNano(body.limit_usd)
  // A budget is a limit and its period. One of them alone changes it and keeps the stored other (OpenRouter's SDK sends
  // `limit_usd` alone); clearing the limit clears the period. What cannot be completed from the stored budget is refused.
  const resetInterval = body.reset_interval !== undefined ? body.reset_interval : body.limit_usd === null ? null : current.resetInterval
  if ((limitNano === null) !== (resetInterval === null)) {
    const isNullMismatch = body.limit_usd === null || body.reset_interval === null
    if (isNullMismatch) throw new InvalidRequestError('body.reset_interval: must be null exactly when limit_usd is (a budget needs both, clearing it clears both)')
    throw new InvalidRequestError(limitNano === null ? 'body.limit_usd: is required with reset_interval' : 'body.reset_interval: is required with limit_usd')
  }
  const enforceZdr = { ...current.enforceZdr }
  for (const family of ZDR_FAMILIES) {
    const value = body[ZDR_FIELDS[family]] as boolean | null | undefined
    if (value !== undefined) enforceZdr[family] = value
    else if (body.enforce_zdr !== undefined) enforceZdr[family] = body.enforce_zdr
  }
  const pick = <V>(value: V | undefined, fallback: V): V => (value === undefined ? fallback : value)
  return {
    ...current,
    name: pick(body.name, current.name),
    description: pick(body.description, current.description),
    allowedModels: pick(body.allowed_models, current.allowedModels),
    ignoredModels: pick(body.ignored_models, current.ignoredModels),
    allowedProviders: pick(body.allowed_providers, current.allowedProviders),
    ignoredProviders: pick(body.ignored_providers, current.ignoredProviders),
    enforceZdr,
    enableFreeModelTraining: pick(body.enable_free_model_training, current.enableFreeModelTraining),
    enablePaidModelTraining: pick(body.enable_paid_model_training, current.enablePaidModelTraining),
    limitNano,
    resetInterval,
    includeByokInBudgets: pick(body.include_byok_in_budgets, current.includeByokInBudgets),
    contentFilters:
      body.content_filters === undefined
        ? current.contentFilters
        : (body.content_filters?.map((filter) => ({ pattern: filter.pattern, action: filter.action, label: filter.label ?? null })) ?? null),
    contentFilterBuiltins:
      body.content_filter_builtins === undefined
        ? current.contentFilterBuiltins
        : (body.content_filter_builtins?.map((entry) => ({ slug: entry.slug, action: entry.action, label: entry.label ?? null, scanScope: entry.scan_scope ?? null })) ?? null),
  }
}
