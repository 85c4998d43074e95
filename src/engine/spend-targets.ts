/** What spend accounting needs from a request and from the gateway (src/engine/spend.ts does the accounting). */

import type { AccountRecord } from '../repositories/accounts'
import type { ApiKeyRecord } from '../repositories/api-keys'
import type { SpendBook } from './spend-book'
import type { WorkspaceRecord } from '../repositories/workspaces'

/** Who a request spends for: the records read while authenticating and planning it. */
export interface SpendTargets {
  key: ApiKeyRecord
  workspace: WorkspaceRecord
  account: AccountRecord
  /** Budgets of the guardrails governing the key, each held against the key's own spend. */
  guardrailBudgets?: GuardrailBudget[]
}

/**
 * A guardrail's `limit_usd` per `reset_interval` (docs/decisions.md, Guardrails): held against the calling key's
 * spend, or, for a guardrail assigned to the key's user (a member), against what all of that user's keys spend.
 */
export interface GuardrailBudget {
  guardrailId: string
  /** How the guardrail governs the request (its key, its user, its workspace), for the usage ledger's record of a refusal. */
  scope: 'key' | 'member' | 'workspace'
  holder: 'key' | 'user'
  name: string
  limitNano: number
  window: 'daily' | 'weekly' | 'monthly'
  includeByok: boolean
}

/** The gateway's spend settings. */
export interface SpendSettings {
  /** Refuse requests of accounts whose granted credits are used up (off: credits are only counted). */
  enforceCredits: boolean
  /** This process's holds and the settlements it is writing; the gateway closes it before its store. */
  book: SpendBook
}
