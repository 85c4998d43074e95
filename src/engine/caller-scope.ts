/**
 * What a caller's requests are planned from: the key's workspace and the workspace's BYOK keys, read here, and what
 * the features read beside them (the guardrails governing the key, docs/decisions.md, Guardrails), through their plan
 * stages' `loadScope` (plan-stage.ts). All keyed by the caller, so a networked store answers the reads in one round
 * trip; a feature's read that needs the workspace (a guardrail assigned elsewhere than its default) costs a second.
 */

import type { Repositories } from '../repositories'
import type { ByokRecord } from '../repositories/byok-credentials'
import type { WorkspaceRecord } from '../repositories/workspaces'
import type { Caller } from '../services/caller'
import type { EndpointPolicy } from './endpoint-policy'
import type { GuardrailBudget } from './spend-targets'

export interface CallerScope {
  /** `null` when the key outlived its workspace (deleted meanwhile). */
  workspace: WorkspaceRecord | null
  credentials: ByokRecord[]
  /** Endpoints the caller's features allow (the guardrails' routing rules); absent: every endpoint. */
  policy?: EndpointPolicy
  /** Budgets held against the caller's spend beside its key's own limits (the guardrails'); absent when none. */
  budgets?: GuardrailBudget[]
}

/** A feature's reads beside the caller's scope: it records what it found on `scope` (its own slot, `policy`, `budgets`). */
export type ScopeLoader = (scope: CallerScope, repositories: Repositories, caller: Caller, workspace: Promise<WorkspaceRecord | null>) => Promise<void>

export const loadCallerScope = async (repositories: Repositories, caller: Caller, loaders: readonly ScopeLoader[]): Promise<CallerScope> => {
  const workspace = repositories.workspaces.get(caller.key.workspaceId)
  const byok = repositories.byok.list({ workspaceId: caller.key.workspaceId }, 0)
  const scope: CallerScope = { workspace: null, credentials: [] }
  const [record, credentials] = await Promise.all([workspace, byok, ...loaders.map((load) => load(scope, repositories, caller, workspace))])
  scope.workspace = record
  scope.credentials = credentials.credentials
  return scope
}
