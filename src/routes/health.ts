/**
 * Health checks for load balancers and process managers, answered without a key: liveness (the process
 * serves requests) and readiness (it can also reach its store, and how late its event loop runs where the host
 * measures it). Neither says which store or where it is. Both name the worker process that answered when the host
 * said which one it is (`createGateway`'s `worker`).
 */

import { withDeadline } from '../core/deadline'
import { ServiceUnavailableError, isGatewayError } from '../core/errors'
import { defineRoute, json } from '../pipeline/route'
import type { GatewayRuntime } from '../pipeline/runtime'
import { DEFAULT_ACCOUNT_SLUG } from '../repositories/accounts'

/** A readiness probe must answer before a load balancer's own timeout (often 2 to 5 s). */
export const READINESS_STORE_TIMEOUT_MS = 2_000

// Probes must never be served from a cache.
const NO_STORE = { 'cache-control': 'no-store' }

const notReady = (reason: string, cause?: unknown) =>
  new ServiceUnavailableError(`Not ready: ${reason}`, { headers: NO_STORE, ...(cause === undefined ? {} : { cause }) })

// A store outage is the answer this check exists for; anything else is a fault of ours (500).
const asNotReady = (error: unknown): never => {
  throw isGatewayError(error) && error.status === 503 ? notReady('the store is unavailable', error) : error
}

/** `{ worker }` when the gateway knows which worker process it is, else nothing. */
const workerOf = (runtime: GatewayRuntime) => (runtime.worker === undefined ? {} : { worker: runtime.worker })

export const liveness = defineRoute({
  method: 'GET',
  path: '/health',
  auth: 'none',
  async handle({ runtime }) {
    return json({ status: 'ok', ...workerOf(runtime) }, 200, NO_STORE)
  },
})

export const readiness = defineRoute({
  method: 'GET',
  path: '/health/ready',
  auth: 'none',
  async handle({ repositories, runtime }) {
    // What every authenticated request depends on: the store answers, and answers in time. The read cache's reading
    // goes first, so the account is read from the store when the store cannot be read (nothing is cached then).
    const probe = runtime.revalidateReads().then(() => repositories.accounts.findBySlug(DEFAULT_ACCOUNT_SLUG))
    await withDeadline(probe.catch(asNotReady), READINESS_STORE_TIMEOUT_MS, () =>
      notReady(`the store did not answer within ${READINESS_STORE_TIMEOUT_MS / 1000} s`),
    )
    const loop = runtime.eventLoop?.read()
    // A stall is reported, not turned into "not ready": the process serves again once it ends, and taking it out
    // of rotation would pile its share on the others.
    const eventLoop = loop
      ? {
          event_loop: {
            status: loop.isSlow ? 'slow' : 'ok',
            delay_p50_ms: loop.p50Ms,
            delay_p99_ms: loop.p99Ms,
            delay_max_ms: loop.maxMs,
            window_seconds: loop.windowSeconds,
            threshold_ms: loop.thresholdMs,
          },
        }
      : {}
    return json({ status: 'ready', checks: { storage: 'ok', ...eventLoop }, ...workerOf(runtime) }, 200, NO_STORE)
  },
})
