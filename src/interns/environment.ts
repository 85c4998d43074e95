/** What the intern lifecycle works with, and the small pieces its modules share. */

import { ConflictError, type GatewayError } from '../core/errors'
import type { Logger } from '../core/logger'
import type { Repositories } from '../repositories'
import type { InternRecord, InternStatus } from '../repositories/interns'
import type { WorkspaceRecord } from '../repositories/workspaces'
import type { ProvisioningSettings } from './lease'
import type { InternRuntime, InternView } from './runtime'
import type { InternSettings } from './settings'

export interface InternEnvironment {
  repositories: Repositories
  runtime: InternRuntime
  logger: Logger
  now: () => Date
  /** Background work (provisioning, destruction) still running in this process. */
  tasks: Set<Promise<unknown>>
  provisioning: ProvisioningSettings
}

/** The environment of a gateway's intern routes and of its own housekeeping. */
export const internEnvironment = (context: {
  repositories: Repositories
  runtime: { interns: InternSettings }
  logger: Logger
  now: () => Date
}): InternEnvironment => ({
  repositories: context.repositories,
  runtime: context.runtime.interns.runtime,
  logger: context.logger,
  now: context.now,
  tasks: context.runtime.interns.tasks,
  provisioning: context.runtime.interns.provisioning,
})

export const conflict = (reason: string, message: string): GatewayError => new ConflictError(message, { reason, retryable: false })

export const invalidTransition = (status: InternStatus, action: string): GatewayError =>
  conflict('invalid_transition', `Cannot ${action} an intern whose status is ${status}`)

/** Runs `work` in the background; `close()` waits for it, and a failure is logged rather than lost. */
export const track = (environment: InternEnvironment, work: Promise<unknown>) => {
  const task = work.catch((error) => environment.logger.error('intern background task failed', { error })).finally(() => environment.tasks.delete(task))
  environment.tasks.add(task)
}

/** The intern as its runtime sees it: the model it should run with now. */
export const toView = (intern: InternRecord, workspace: WorkspaceRecord): InternView => ({
  id: intern.id,
  name: intern.name,
  workspaceId: intern.workspaceId,
  instructions: intern.instructions,
  model: intern.runningModel ?? intern.model ?? workspace.defaultTextModel,
  vaultId: intern.vaultId,
  attachedVaultId: intern.attachedVaultId,
  hostname: intern.hostname,
})
