import type { EventLoopMonitor } from '../core/event-loop'
/** What routes work with beyond storage, built once per gateway: the inference service and the intern settings. */

import type { InferenceRequest } from '../engine/request'
import type { RunOutcome } from '../engine/run-stage'
import type { InferenceService } from '../engine/service'
import type { InternSettings } from '../interns/settings'
import type { Ledger } from '../ledger/ledger'
import type { AuditLog } from '../services/audit-log'
import type { RateLimitOptions } from './rate-limit'
import type { StoredResponses } from '../services/stored-responses'
import type { BackgroundRuns } from '../services/background-runs'

export interface GatewayRuntime {
  inference: InferenceService
  /** Runs a prepared request through the features' stages and the engine's own run (src/engine/run-stage.ts). */
  runRequest: (request: InferenceRequest) => Promise<RunOutcome>
  interns: InternSettings
  /** The usage ledger: generation records and their retention; null when the operator turned it off (`ledger.enabled: false`). */
  ledger: Ledger | null
  /** The audit log of administrative changes (docs/decisions.md, Audit log); routes write to it through `context.audit`. */
  auditLog: AuditLog
  /** Stored responses (docs/decisions.md, Stored responses); null when the gateway stores none. */
  storedResponses: StoredResponses | null
  /** Background runs of `/responses` (docs/decisions.md, Background runs); null when the gateway stores no responses. */
  backgroundRuns: BackgroundRuns | null
  /** The header a trusted proxy sets to the requested hostname; none means the host the server was reached on. */
  trustedHostHeader: string | undefined
  /** The per-key request limit, when one is configured (reported by `GET /key`). */
  rateLimit: RateLimitOptions | undefined
  /** The host's event-loop monitor (`/health/ready` reports it); none where the host gave none. */
  eventLoop: EventLoopMonitor | undefined
  /** The worker process this gateway serves in (`createGateway`'s `worker`), reported by the health checks. */
  worker: number | undefined
  /** Makes the next reads see every store change that returned before now (the read cache's generation). */
  revalidateReads: () => Promise<void>
}
