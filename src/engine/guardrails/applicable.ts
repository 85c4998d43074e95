/**
 * Which guardrails govern a request (docs/decisions.md, Guardrails): the one assigned to the calling key and the
 * default guardrail of the key's workspace. Both apply; where they differ the stricter rule wins (allow lists
 * intersect, ignore lists and zero-data-retention switches add up, each budget holds on its own, every content
 * filter runs).
 */

import type { GuardrailKeyAssignment, GuardrailRecord, GuardrailsRepository } from '../../repositories/guardrails'

/** Whether a guardrail governs the request through its key's assignment or its workspace's default. */
export type GuardrailScope = 'key' | 'workspace'

export interface AppliedGuardrail {
  record: GuardrailRecord
  scope: GuardrailScope
}

/**
 * The guardrails of a request, from the key's assignment (read beforehand, beside the workspace) and the workspace's
 * default guardrail id. A default that was never configured is not stored and enforces nothing.
 */
export const loadApplicableGuardrails = async (
  repository: GuardrailsRepository,
  accountId: string,
  assignment: GuardrailKeyAssignment | null,
  defaultGuardrailId: string,
): Promise<AppliedGuardrail[]> => {
  const isSame = assignment?.guardrailId === defaultGuardrailId
  const [assigned, workspaceDefault] = await Promise.all([
    assignment ? repository.get(assignment.guardrailId) : null,
    isSame ? null : repository.get(defaultGuardrailId),
  ])
  const applied: AppliedGuardrail[] = []
  // A guardrail of another account never governs this one's traffic, whatever a stale record says.
  if (assigned && assigned.accountId === accountId) applied.push({ record: assigned, scope: 'key' })
  if (workspaceDefault && workspaceDefault.accountId === accountId) applied.push({ record: workspaceDefault, scope: 'workspace' })
  return applied
}
