/**
 * A request a guardrail refused (docs/decisions.md, Guardrails → Records): a content filter's block, routing rules
 * that left no endpoint, a budget. The refusal carries what the usage ledger records of it, so the route that
 * answers it writes one generation record, which the caller can then find by the id the error names. It is the
 * kernel's because the kernel's spend limits refuse by a guardrail's budget too; the guardrails' feature
 * (src/features/guardrails/) marks its own refusals with it.
 */

import type { GatewayError } from '../core/errors'
import type { GenerationGuardrailEvent } from '../repositories/generations'

export interface GuardrailRefusal {
  /** What refused the request, as the record keeps it; empty when the request already holds its events (an output block). */
  events: GenerationGuardrailEvent[]
  /** The model asked for, when the refusal came before the request was prepared. */
  requestedModel?: string
}

// The error is what travels from the engine to the route that records it; it stays the error the caller is answered.
const refusals = new WeakMap<object, GuardrailRefusal>()

/** Marks `error` as a guardrail's refusal of the request. */
export const withGuardrailRefusal = (error: GatewayError, refusal: GuardrailRefusal): GatewayError => {
  refusals.set(error, refusal)
  return error
}

/** The refusal `error` stands for; `undefined` for any error a guardrail did not cause. */
export const guardrailRefusalOf = (error: unknown): GuardrailRefusal | undefined =>
  typeof error === 'object' && error !== null ? refusals.get(error) : undefined

/**
 * The event of a refusal by rules rather than content: `rules` names the guardrail's fields that refused
 * (`allowed_models`, `limit_usd`, …); a rule matches no text, so `matches` is 0.
 */
export const ruleRefusalEvent = (guardrail: Pick<GenerationGuardrailEvent, 'guardrailId' | 'scope'>, rules: string[]): GenerationGuardrailEvent => ({
  guardrailId: guardrail.guardrailId,
  scope: guardrail.scope,
  direction: 'input',
  action: 'block',
  patterns: rules,
  matches: 0,
})
