/**
 * The guardrails' plan stage (src/engine/plan-stage.ts): the guardrails governing the caller are read beside its
 * workspace (their routing rules and budgets hold for every request of the caller's, embeddings too), and their
 * content filters scan the input before anything else reads it: a block costs nothing, a redaction is all that goes on.
 */

import type { PlanStage, Preparation } from '../../engine/plan-stage'
import { withGuardrailRefusal } from '../../engine/refusal'
import { requestedModels } from '../../engine/routing'
import { refusedServiceMetadata } from '../../engine/service-metadata'
import { guardrailBudgetsOf, prefetchGuardrails, resolveGuardrails, type AppliedGuardrail } from './applicable'
import { guardInput, guardrailBlockError } from './enforce'
import { GUARDRAILS, guardrailEventsOf, setGuardrailEvents } from './request-guardrails'
import { endpointPolicyOf } from './routing-policy'

/** The content filters' scan of the input: a block refuses the request, a redaction is the body it runs. */
const scanInput = async (preparation: Preparation, guardrails: readonly AppliedGuardrail[]): Promise<void> => {
  const { service, body } = preparation
  const guarded = await guardInput(guardrails, body)
  if (!guarded) return
  if (guarded.block) {
    const requested = requestedModels(body.model, body.models, preparation.defaultModel)[0]!
    const metadata = preparation.isMetadataRequested ? refusedServiceMetadata(service, requested, guarded.stages, preparation.startedAt) : undefined
    // The usage ledger records the block with everything the scan found (the route writes it: nothing was prepared).
    throw withGuardrailRefusal(guardrailBlockError(guarded.block, metadata), { events: guarded.events, requestedModel: requested })
  }
  preparation.body = guarded.content
  preparation.pipeline.push(...guarded.stages)
  setGuardrailEvents(preparation, [...guarded.events])
}

export const guardrailsPlanStage: PlanStage = {
  name: 'guardrails',
  async loadScope(scope, repositories, caller, workspace) {
    const [record, prefetched] = await Promise.all([
      workspace,
      prefetchGuardrails(repositories.guardrails, {
        accountId: caller.account.id,
        keyHash: caller.key.hash,
        userId: caller.key.creatorUserId,
        workspaceId: caller.key.workspaceId,
      }),
    ])
    const guardrails = record ? await resolveGuardrails(repositories.guardrails, caller.account.id, record, prefetched) : []
    GUARDRAILS.set(scope, guardrails)
    const policy = endpointPolicyOf(guardrails)
    if (policy) scope.policy = policy
    const budgets = guardrailBudgetsOf(guardrails)
    if (budgets.length > 0) scope.budgets = budgets
  },
  checkInput(preparation) {
    const guardrails = GUARDRAILS.get(preparation.scope)
    // No guardrail, no content filter: nothing to scan.
    return guardrails && guardrails.length > 0 ? scanInput(preparation, guardrails) : undefined
  },
  finish(preparation, request) {
    const guardrails = GUARDRAILS.get(preparation.scope)
    if (guardrails && guardrails.length > 0) GUARDRAILS.set(request, guardrails)
    const events = guardrailEventsOf(preparation)
    if (events) setGuardrailEvents(request, [...events])
  },
}
