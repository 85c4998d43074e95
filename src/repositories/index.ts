import type { StorageDriver } from '../storage/contract'
import { createAccountsRepository } from './accounts'
import { createApiKeysRepository } from './api-keys'
import { createByokRepository } from './byok-credentials'
import { createGenerationsRepository } from './generations'
import { createCreditGrantsRepository } from './credit-grants'
import { createIdempotencyRepository } from './idempotency-keys'
import { createGuardrailsRepository } from './guardrails'
import { createInternsRepository } from './interns'
import { createPresetsRepository } from './presets'
import { createSpendRepository } from './spend-counters'
import { createWorkspacesRepository, type WorkspaceDefaults } from './workspaces'

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
  guardrails: createGuardrailsRepository(storage, now),
  presets: createPresetsRepository(storage, now),
})

export type Repositories = ReturnType<typeof createRepositories>
