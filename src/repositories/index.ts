import type { StorageDriver } from '../storage/contract'
import { ACCOUNTS, createAccountsRepository } from './accounts'
import { API_KEYS, createApiKeysRepository } from './api-keys'
import { createAuditLogRepository } from './audit-log'
import { BYOK_CREDENTIALS, createByokRepository } from './byok-credentials'
import { createEndpointPerformanceRepository } from './endpoint-performance'
import { createGenerationsRepository } from './generations'
import { createCreditGrantsRepository, CREDIT_GRANTS } from './credit-grants'
import { createIdempotencyRepository } from './idempotency-keys'
import { createGuardrailsRepository, GUARDRAIL_KEY_ASSIGNMENTS, GUARDRAIL_MEMBER_ASSIGNMENTS, GUARDRAILS } from './guardrails'
import { createInternsRepository } from './interns'
import { createPresetsRepository, PRESET_VERSIONS, PRESETS } from './presets'
import { createResponseCacheRepository } from './response-cache'
import { createSpendRepository } from './spend-counters'
import { createStoredResponsesRepository } from './stored-responses'
import { createBackgroundRunsRepository } from './background-runs'
import { createSpendOwnersRepository } from './spend-owners'
import { createWorkspacesRepository, WORKSPACES, type WorkspaceDefaults } from './workspaces'

/**
 * The collections a request reads and only people change (a management call, a CLI command), which a read cache may
 * keep: never the usage ledger, idempotency keys or interns, which requests themselves write.
 */
export const RARELY_CHANGED_COLLECTIONS = [
  API_KEYS,
  ACCOUNTS,
  WORKSPACES,
  BYOK_CREDENTIALS,
  CREDIT_GRANTS,
  GUARDRAILS,
  GUARDRAIL_KEY_ASSIGNMENTS,
  GUARDRAIL_MEMBER_ASSIGNMENTS,
  PRESETS,
  PRESET_VERSIONS,
] as const

/** Typed access to every resource; the only way routes and admin reach storage. */
export const createRepositories = (storage: StorageDriver, workspaceDefaults: WorkspaceDefaults, now: () => Date) => ({
  accounts: createAccountsRepository(storage, now),
  apiKeys: createApiKeysRepository(storage, now),
  idempotency: createIdempotencyRepository(storage),
  byok: createByokRepository(storage, now),
  generations: createGenerationsRepository(storage),
  interns: createInternsRepository(storage, now),
  workspaces: createWorkspacesRepository(storage, workspaceDefaults, now),
  creditGrants: createCreditGrantsRepository(storage, now),
  spend: createSpendRepository(storage),
  spendOwners: createSpendOwnersRepository(storage),
  guardrails: createGuardrailsRepository(storage, now),
  presets: createPresetsRepository(storage, now),
  auditLog: createAuditLogRepository(storage),
  storedResponses: createStoredResponsesRepository(storage),
  backgroundRuns: createBackgroundRunsRepository(storage),
  responseCache: createResponseCacheRepository(storage),
  endpointPerformance: createEndpointPerformanceRepository(storage),
})

export type Repositories = ReturnType<typeof createRepositories>
