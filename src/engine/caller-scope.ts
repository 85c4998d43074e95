/**
 * What a caller's requests are planned from: the key's workspace, the workspace's BYOK keys and the guardrails that
 * govern the key (docs/decisions.md, Guardrails). All keyed by the caller, so a networked store answers the reads
 * in one round trip; only a guardrail assigned elsewhere than the workspace default costs a second.
 */

import type { Repositories } from '../repositories'
import type { ByokRecord } from '../repositories/byok-credentials'
import type { WorkspaceRecord } from '../repositories/workspaces'
import type { Caller } from '../services/caller'
import { prefetchGuardrails, resolveGuardrails, type AppliedGuardrail } from '../features/guardrails/applicable'

export interface CallerScope {
  /** `null` when the key outlived its workspace (deleted meanwhile). */
  workspace: WorkspaceRecord | null
  credentials: ByokRecord[]
  guardrails: AppliedGuardrail[]
}

export const loadCallerScope = async (repositories: Pick<Repositories, 'workspaces' | 'byok' | 'guardrails'>, caller: Caller): Promise<CallerScope> => {
  const [workspace, byok, prefetched] = await Promise.all([
    repositories.workspaces.get(caller.key.workspaceId),
    repositories.byok.list({ workspaceId: caller.key.workspaceId }, 0),
    prefetchGuardrails(repositories.guardrails, {
      accountId: caller.account.id,
      keyHash: caller.key.hash,
      userId: caller.key.creatorUserId,
      workspaceId: caller.key.workspaceId,
    }),
  ])
  const guardrails = workspace ? await resolveGuardrails(repositories.guardrails, caller.account.id, workspace, prefetched) : []
  return { workspace, credentials: byok.credentials, guardrails }
}
