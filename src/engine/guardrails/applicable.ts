/**
 * Which guardrails govern a request (docs/decisions.md, Guardrails): the one assigned to the calling key and the
 * default guardrail of the key's workspace. Both apply; where they differ the stricter rule wins (allow lists
 * intersect, ignore lists and zero-data-retention switches add up, each budget holds on its own, every content
 * filter runs).
 */

import type { GuardrailKeyAssignment, GuardrailRecord, GuardrailsRepository } from '../../repositories/guardrails'
import { derivedGuardrailId, type WorkspaceRecord } from '../../repositories/workspaces'

/** Whether a guardrail governs the request through its key's assignment or its workspace's default. */
export type GuardrailScope = 'key' | 'workspace'

export interface AppliedGuardrail {
  record: GuardrailRecord
  scope: GuardrailScope
}

/** What can be read before the workspace is known: the key's assignment and the workspace's own default guardrail. */
export interface GuardrailPrefetch {
  assignment: GuardrailKeyAssignment | null
  derivedDefault: { id: string; record: GuardrailRecord | null }
}

/**
 * Reads the key's assignment and the workspace's own default guardrail (its id is derived from the workspace id),
 * so they go to the store together with the workspace itself: no round trip of their own in the common case.
 */
export const prefetchGuardrails = async (repository: GuardrailsRepository, keyHash: string, workspaceId: string): Promise<GuardrailPrefetch> => {
  const [assignment, derivedDefault] = await Promise.all([
    repository.assignmentOf(keyHash),
    derivedGuardrailId(workspaceId).then(async (id) => ({ id, record: await repository.get(id) })),
  ])
  return { assignment, derivedDefault }
}

/**
 * The guardrails of a request: the key's (by its assignment) and the workspace's default (by `default_guardrail_id`,
 * which may name another guardrail than the derived one). A default never configured is not stored and enforces nothing.
 */
export const resolveGuardrails = async (
  repository: GuardrailsRepository,
  accountId: string,
  workspace: Pick<WorkspaceRecord, 'defaultGuardrailId'>,
  prefetched: GuardrailPrefetch,
): Promise<AppliedGuardrail[]> => {
  const defaultId = workspace.defaultGuardrailId
  const readOrReuse = (id: string) => (id === prefetched.derivedDefault.id ? prefetched.derivedDefault.record : repository.get(id))
  const assignedId = prefetched.assignment?.guardrailId
  const [assigned, workspaceDefault] = await Promise.all([
    assignedId === undefined || assignedId === defaultId ? null : readOrReuse(assignedId),
    readOrReuse(defaultId),
  ])
  const applied: AppliedGuardrail[] = []
  // A guardrail of another account never governs this one's traffic, whatever a stale record says.
  if (assigned && assigned.accountId === accountId) applied.push({ record: assigned, scope: 'key' })
  // A key assigned its own workspace's default guardrail is governed by it once, as that key's.
  if (workspaceDefault && workspaceDefault.accountId === accountId) applied.push({ record: workspaceDefault, scope: assignedId === defaultId ? 'key' : 'workspace' })
  return applied
}
