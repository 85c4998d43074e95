/**
 * The spend book of one gateway process (docs/decisions.md, "Books that balance"): the holds it made, renewed
 * while their requests run, and the settlements it has not yet seen land, sent in batches and retried until they
 * do. The store applies a settlement once per id, so a retry after a fault that hid a success changes nothing;
 * a hold's lease runs out when its process dies, and any process then releases it.
 *
 * A request whose answer the usage ledger records opens a gate: the settlements that charge it wait behind the gate
 * until its record is written, and the record carries them. So a settlement never lands without its record, and a
 * record whose settlements a killed process never sent can be settled again from the record
 * (src/ledger/settlement-recovery.ts).
 */

import { createGroupCommit } from '../core/group-commit'
import type { Logger } from '../core/logger'
import { causeOf, startPeriodicTask, unrefSleep, unrefTimer } from '../core/periodic'
import type { SpendChange, SpendCounter, SpendRepository, SpendSettlement } from '../repositories/spend-counters'

/** A hold lasts this long unless renewed (a third of it between renewals): a dead process's holds return within two leases. */
export const DEFAULT_SPEND_LEASE_MS = 60_000

/** Settlements in one store call. */
const MAX_BATCH = 100
/** Store calls under way at once. */
const MAX_IN_FLIGHT = 4
/** Settlements waiting beyond this are written off with an error line (a store down for very long under load). */
const MAX_QUEUE = 100_000
/** Ids renewed in one store call. */
const RENEW_BATCH = 500
/** Expired holds released in one store call, and calls per sweep. */
const RELEASE_BATCH = 100
const RELEASE_ROUNDS = 20
/** Backoff between attempts of a settlement batch: doubling from the first to the last. */
const FIRST_RETRY_MS = 100
const MAX_RETRY_MS = 5_000
/** How long `close` waits for settlements still queued before it writes them off in the log. */
const CLOSE_GRACE_MS = 10_000
/**
 * How long a gate keeps settlements waiting for their record: a record is written as its answer ends, so this is
 * reached only when no record came (a path that writes none and did not say so); they are sent then, with a warning.
 */
const GATE_MAX_MS = 30_000
/** A gate nothing waits behind is forgotten after this long: its request ended without saying so (a stream never started). */
const GATE_IDLE_MAX_MS = 3_600_000

export interface SpendBookOptions {
  repository: SpendRepository
  logger: Logger
  /** A hold's lease (default 60 s). */
  leaseMs?: number
  /** How long `close` waits for queued settlements (default 10 s). */
  closeGraceMs?: number
}

/** The settlements of one request that wait for its record (docs/decisions.md, "Books that balance"). */
export interface SettlementGate {
  /** The settlements waiting so far, which the record carries; they keep waiting until `open`. */
  take(): SpendSettlement[]
  /**
   * Sends every waiting settlement, and from now on each at once: the record landed, or none will be written.
   * Resolves once they landed. Calling it again does nothing more.
   */
  open(): Promise<void>
}

export interface SpendBook {
  /** This process's id on the holds it makes. */
  readonly owner: string
  readonly leaseMs: number
  /**
   * Holds `changes` under the reservation `id` and resolves with each counter's new value; the hold is renewed
   * until its settlement lands. When the store fails to answer, the hold may still have landed: its release is
   * queued before the error is thrown.
   */
  hold(id: string, changes: readonly SpendChange[]): Promise<number[]>
  /**
   * Queues the settlement of `id`; resolves once it landed. Never rejects: a failed write is retried. A settlement
   * that charges something for the request `requestId` waits behind its gate while one is shut.
   */
  settle(id: string, changes: readonly SpendChange[], requestId?: string): Promise<void>
  /** Shuts a gate for the request `requestId`: its charging settlements wait until the gate opens. */
  gate(requestId: string): SettlementGate
  /** Each counter's current value. */
  read(counters: readonly SpendCounter[]): Promise<number[]>
  /** Resolves once every settlement queued so far has landed, those waiting for their record included. */
  flush(): Promise<void>
  /** Releases holds whose lease ran out (any process's); resolves with how many. */
  releaseExpired(): Promise<number>
  /** Stops renewing and sweeping; waits a while for queued settlements, then logs those it gives up on. */
  close(): Promise<void>
}

/** A settlement as the log shows it: the counters without the key's full hash, and the amounts. */
const describe = (settlement: SpendSettlement) => ({
  id: settlement.id,
  changes: settlement.changes.map((change) => ({ counter: change.counter.key.replace(/([0-9a-f]{8})[0-9a-f]{56}/, '$1…'), amountNano: change.amount })),
})

export const createSpendBook = (options: SpendBookOptions): SpendBook => {
  const { repository, logger } = options
  const leaseMs = options.leaseMs ?? DEFAULT_SPEND_LEASE_MS
  const owner = `gw_${crypto.randomUUID()}`
  /** Holds of this process whose settlement has not landed yet: renewed until it does. */
  const live = new Set<string>()
  let isClosed = false

  /** Sends a batch until it lands, backing off between attempts; gives up only once the book has closed. */
  const writeUntilLanded = async (batch: SpendSettlement[]) => {
    for (let attempt = 1, delay = FIRST_RETRY_MS; ; attempt++, delay = Math.min(delay * 2, MAX_RETRY_MS)) {
      try {
        await repository.settle(batch)
        for (const settlement of batch) live.delete(settlement.id)
        if (attempt > 1) logger.info('spend settlements written after a retry', { settlements: batch.length, attempts: attempt })
        return
      } catch (error) {
        if (isClosed) {
          logger.error('spend settlements not written: the gateway closed before the store answered; correct these counters by hand', {
            settlements: batch.map(describe),
            error,
            ...causeOf(error),
          })
          return
        }
        logger.warn('spend settlement failed; retrying', { settlements: batch.length, attempt, retryInMs: delay, error, ...causeOf(error) })
        await unrefSleep(delay)
      }
    }
  }

  const commit = createGroupCommit(writeUntilLanded, {
    maxBatch: MAX_BATCH,
    maxQueue: MAX_QUEUE,
    maxInFlight: MAX_IN_FLIGHT,
    overloadedMessage: 'Spend settlements are not keeping up with requests',
  })

  const send = (settlement: SpendSettlement): Promise<void> =>
    commit.add(settlement).catch((error: unknown) => {
      // Only a full queue rejects: the store has been down for long under load.
      logger.error('spend settlement dropped: too many are waiting for the store; correct these counters by hand', { settlement: describe(settlement), error })
    })

  /** A shut gate: the settlements waiting behind it, what resolves their callers, and how it opens. */
  interface ShutGate {
    waiting: SpendSettlement[]
    landed: Array<() => void>
    open(): Promise<void>
    /** Starts the bound on how long settlements wait, at the first that does. */
    arm(): void
    /** `Date.now()` when it was shut. */
    shutAt: number
  }
  const gates = new Map<string, ShutGate>()

  const settle = (id: string, changes: readonly SpendChange[], requestId?: string): Promise<void> => {
    const settlement = { id, changes }
    const gate = requestId === undefined || changes.length === 0 ? undefined : gates.get(requestId)
    // A release (nothing charged) never waits: what it gives back is no answer's cost.
    if (!gate) return send(settlement)
    gate.waiting.push(settlement)
    gate.arm()
    return new Promise<void>((resolve) => gate.landed.push(resolve))
  }

  const gate = (requestId: string): SettlementGate => {
    const waiting: SpendSettlement[] = []
    const landed: Array<() => void> = []
    let opened: Promise<void> | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    const open = (): Promise<void> => {
      if (opened) return opened
      clearTimeout(timer)
      if (gates.get(requestId)?.open === open) gates.delete(requestId)
      const sent = waiting.splice(0).map(send)
      opened = Promise.all(sent).then(() => {
        for (const resolve of landed.splice(0)) resolve()
      })
      return opened
    }
    const arm = () => {
      if (timer !== undefined) return
      timer = setTimeout(() => {
        logger.warn('spend settlements sent without their usage record: none was written in time', { requestId, settlements: waiting.map(describe) })
        void open()
      }, GATE_MAX_MS)
      unrefTimer(timer)
    }
    gates.set(requestId, { waiting, landed, open, arm, shutAt: Date.now() })
    return { take: () => [...waiting], open }
  }

  const renew = async () => {
    const ids = [...live]
    for (let start = 0; start < ids.length; start += RENEW_BATCH) {
      await repository.renew(ids.slice(start, start + RENEW_BATCH), leaseMs)
    }
  }

  const releaseExpired = async () => {
    let released = 0
    for (let round = 0; round < RELEASE_ROUNDS; round++) {
      const count = await repository.releaseExpired(RELEASE_BATCH)
      released += count
      if (count < RELEASE_BATCH) break
    }
    if (released > 0) logger.info('released spend holds whose lease ran out', { holds: released })
    return released
  }

  /** Runs `task` every `everyMs`, one run at a time, logging a failure and carrying on. */
  const every = (everyMs: number, name: string, task: () => Promise<unknown>) =>
    startPeriodicTask(everyMs, task, (error) => logger.warn(`${name} failed; trying again later`, { error, ...causeOf(error) }))

  const forgetIdleGates = () => {
    const before = Date.now() - GATE_IDLE_MAX_MS
    for (const [requestId, shut] of gates) if (shut.waiting.length === 0 && shut.shutAt < before) gates.delete(requestId)
  }
  const renewal = every(Math.max(1, Math.floor(leaseMs / 3)), 'renewing spend holds', () => {
    forgetIdleGates()
    return live.size === 0 ? Promise.resolve() : renew()
  })
  const sweep = every(Math.max(1, Math.floor(leaseMs / 2)), 'releasing expired spend holds', releaseExpired)
  // A process that starts releases what its predecessors left held, once their leases ran out.
  sweep.run()

  return {
    owner,
    leaseMs,

    async hold(id, changes) {
      live.add(id)
      try {
        return await repository.hold({ id, owner, leaseMs, changes })
      } catch (error) {
        // The hold may have landed before the store failed to answer: settling the id releases it (or, if it lands
        // later still, refuses it).
        void settle(id, [])
        throw error
      }
    },

    settle,

    gate,

    read: (counters) => repository.read(counters),

    async flush() {
      // Settlements waiting for a record about to be written (their answer has ended) are part of what is queued.
      await Promise.all(
        [...gates.values()].filter((shut) => shut.waiting.length > 0).map((shut) => new Promise<void>((resolve) => shut.landed.push(resolve))),
      )
      await commit.drain()
    },

    releaseExpired,

    async close() {
      // Records are written before the book closes: whatever still waits has no record coming.
      for (const waiting of [...gates.values()]) void waiting.open()
      await Promise.all([renewal.stop(), sweep.stop()])
      const drained = commit.drain()
      const timer = setTimeout(() => {
        isClosed = true
      }, options.closeGraceMs ?? CLOSE_GRACE_MS)
      unrefTimer(timer)
      await drained
      clearTimeout(timer)
      isClosed = true
    },
  }
}
