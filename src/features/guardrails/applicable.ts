/**
 * Which guardrails govern a request (docs/decisions.md, Guardrails): the one assigned to the calling key, the one
 * assigned to the user the key acts for, and the default guardrail of the key's workspace. All apply; where they differ the stricter rule wins (allow lists
 * intersect, ignore lists and zero-data-retention switches add up, each budget holds on its own, every content
 * filter runs).
 */

import type { GuardrailKeyAssignment, GuardrailMemberAssignment, GuardrailRecord, GuardrailsRepository } from '../../repositories/guardrails'
import { derivedGuardrailId, type WorkspaceRecord } from '../../repositories/workspaces'
import type { GuardrailBudget } from '../../engine/spend-targets'

/** How a guardrail governs the request: assigned to its key, to the key's user (member), or its workspace's default. */
export type GuardrailScope = 'key' | 'member' | 'workspace'

export interface AppliedGuardrail {
  record: GuardrailRecord
  scope: GuardrailScope
}

/** What can be read before the workspace is known: the key's and its user's assignments, the workspace's own default. */
export interface GuardrailPrefetch {
  assignment: GuardrailKeyAssignment | null
  memberAssignment: GuardrailMemberAssignment | null
  derivedDefault: { id: string; record: GuardrailRecord | null }
}

/** Who is calling, as far as guardrails care. */
export interface GuardrailSubject {
  accountId: string
  keyHash: string
  /** The user the key acts for (its `creator_user_id`): the member whose guardrail the key follows. */
  userId: string
  workspaceId: string
}

/**
 * Reads the assignments of the key and of its user, and the workspace's own default guardrail (its id is derived
 * from the workspace id), so they go to the store together with the workspace itself: no round trip of their own
 * in the common case.
 */
export const prefetchGuardrails = async (repository: GuardrailsRepository, subject: GuardrailSubject): Promise<GuardrailPrefetch> => {
  const [assignment, memberAssignment, derivedDefault] = await Promise.all([
    repository.assignmentOf(subject.keyHash),
    repository.memberAssignmentOf(subject.accountId, subject.userId),
    derivedGuardrailId(subject.workspaceId).then(async (id) => ({ id, record: await repository.get(id) })),
  ])
  return { assignment, memberAssignment, derivedDefault }
}

/**
 * The guardrails of a request: the key's, its user's, and the workspace's default (by `default_guardrail_id`, which
 * may name another guardrail than the derived one), each once, named by the closest scope that brings it. A
 * default never configured is not stored and enforces nothing.
 */
export const resolveGuardrails = async (
  repository: GuardrailsRepository,
  accountId: string,
  workspace: Pick<WorkspaceRecord, 'defaultGuardrailId'>,
  prefetched: GuardrailPrefetch,
): Promise<AppliedGuardrail[]> => {
  const wanted = new Map<string, GuardrailScope>()
  if (prefetched.assignment) wanted.set(prefetched.assignment.guardrailId, 'key')
  if (prefetched.memberAssignment && !wanted.has(prefetched.memberAssignment.guardrailId)) wanted.set(prefetched.memberAssignment.guardrailId, 'member')
  if (!wanted.has(workspace.defaultGuardrailId)) wanted.set(workspace.defaultGuardrailId, 'workspace')
  const ids = [...wanted.keys()]
  const records = await Promise.all(ids.map((id) => (id === prefetched.derivedDefault.id ? prefetched.derivedDefault.record : repository.get(id))))
  // A guardrail of another account never governs this one's traffic, whatever a stale record says.
  return records.flatMap((record, index) => (record && record.accountId === accountId ? [{ record, scope: wanted.get(ids[index]!)! }] : []))
}

/** The budgets of the guardrails governing a request: those with both `limit_usd` and `reset_interval`. */
export const guardrailBudgetsOf = (guardrails: readonly AppliedGuardrail[]): GuardrailBudget[] =>
  guardrails.flatMap(({ record, scope }) =>
    record.limitNano === null || record.resetInterval === null
      ? []
      : [
          {
            guardrailId: record.id,
            scope,
            name: record.name,
            // A member's budget is the member's, whichever of their keys spends it; any other is each key's own.
            holder: scope === 'member' ? ('user' as const) : ('key' as const),
            limitNano: record.limitNano,
            window: record.resetInterval,
            includeByok: record.includeByokInBudgets,
          },
        ],
  )
