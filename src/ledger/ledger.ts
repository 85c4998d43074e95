/**
 * The usage ledger (docs/decisions.md, Usage ledger): generation records written through one group commit per
 * gateway, so requests finishing together share a store round trip, and a retention sweep that deletes the
 * oldest records in bounded pages.
 */

import { isGatewayError } from '../core/errors'
import { createGroupCommit } from '../core/group-commit'
import type { Logger } from '../core/logger'
import { causeOf, startPeriodicTask, sweepOlderThan, unrefSleep } from '../core/periodic'
import type { SettlementGate } from '../engine/spend-book'
import type { GenerationContentRecord, GenerationRecord, GenerationsRepository } from '../repositories/generations'
import type { SettlementRecovery } from './settlement-recovery'

export const DEFAULT_RETENTION_DAYS = 30
export const DEFAULT_LEDGER_SWEEP_INTERVAL_MS = 10 * 60_000

const DAY_MS = 86_400_000
/** A write carries at most this many records: one Lua script, one multi-row insert. */
const MAX_BATCH = 100
/** Records waiting beyond this answer 503: a store that stopped answering must not grow memory without bound. */
const MAX_QUEUE = 10_000
/** Writes under way at once: below it a record goes out at once, above it records wait and share the next. */
const MAX_IN_FLIGHT = 4
/** Backoff between the background attempts of a write its requests were told failed: doubling from the first to the last. */
const FIRST_RETRY_MS = 200
const MAX_RETRY_MS = 5_000
/** How long `close` waits for those writes before it gives up on them with an error line. */
const CLOSE_GRACE_MS = 10_000

export interface LedgerOptions {
  /** How long `close` waits for writes still being retried (default 10 s). */
  closeGraceMs?: number
  /** Where records that carry settlements get their batch; without it a record carries none (they are sent all the same). */
  recovery?: SettlementRecovery
}

export interface LedgerSettings {
  /** Days a record is kept (and shown) after its request. */
  retentionDays: number
  /** How often this process sweeps expired records; `false` for never (another process sweeps). */
  sweepIntervalMs: number | false
}

export interface Ledger {
  readonly retentionDays: number
  /**
   * Stores a record together with others finishing now; resolves once it is stored (once, whatever the retries).
   * Rejects when the store failed twice, and then keeps sending it in the background until it lands. With its
   * request's settlement `gate`, the record carries the settlements waiting there, and the gate opens once the write
   * ended, so they land after it (docs/decisions.md, "Books that balance").
   */
  write(record: GenerationRecord, gate?: SettlementGate): Promise<void>
  /** Stores what a generation said, for a workspace with private logging on (after its record). */
  writeContent(content: GenerationContentRecord): Promise<void>
  /** The oldest creation time (ISO 8601) still kept: older records are never shown and are swept. */
  retainedSince(): string
  /** Deletes expired records, at most a bounded number per call; resolves with how many went. */
  sweep(): Promise<number>
  /** Stops the sweep and waits for the writes accepted so far, and a while for those still being retried. */
  close(): Promise<void>
}


/** A record as a log line names it: enough to find its request and correct the books by hand. */
const describe = (record: GenerationRecord) => ({ id: record.id, requestId: record.requestId, keyHash: record.keyHash.slice(0, 8), cost: record.cost })

/** A store that could not be reached or did not answer (503): the write may land when it is back. */
const isUnavailable = (error: unknown) => isGatewayError(error) && error.status === 503

export const createLedger = (repository: GenerationsRepository, settings: LedgerSettings, now: () => Date, logger: Logger, options: LedgerOptions = {}): Ledger => {
  /** Background writes of batches whose requests were told they failed. */
  const retrying = new Set<Promise<void>>()
  let isClosed = false
  let closed: () => void = () => {}
  const closing = new Promise<void>((resolve) => (closed = resolve))

  /**
   * Sends a batch its requests gave up on until it lands. Their answers were paid for, and their spend settlements are
   * retried until they land (src/engine/spend-book.ts): the record must land too, or once the store is back a key's
   * usage would count answers its ledger does not show. Only an unavailable store is retried: any other error would
   * fail again.
   */
  const keepSending = (batch: GenerationRecord[]) => {
    const run = (async () => {
      for (let attempt = 3, delay = FIRST_RETRY_MS; ; attempt++, delay = Math.min(delay * 2, MAX_RETRY_MS)) {
        await Promise.race([unrefSleep(delay), closing])
        if (isClosed) {
          logger.error('usage ledger records not written: the gateway closed before the store answered; their spend is counted', {
            records: batch.map(describe),
          })
          return
        }
        try {
          await repository.store(batch)
          logger.info('usage ledger records written after retries', { records: batch.length, attempts: attempt })
          return
        } catch (error) {
          if (!isUnavailable(error)) {
            logger.error('usage ledger records lost: the store refused them; their spend is counted', { records: batch.map(describe), error })
            return
          }
          logger.warn('usage ledger write failed; retrying', { records: batch.length, attempt, retryInMs: delay, error, ...causeOf(error) })
        }
      }
    })()
    retrying.add(run)
    void run.finally(() => retrying.delete(run))
  }

  const store = async (batch: GenerationRecord[]) => {
    try {
      await repository.store(batch)
    } catch (error) {
      // The write may have happened before the store failed to answer; ids already stored are left as they are,
      // so sending the batch again cannot record anything twice.
      logger.warn('usage ledger write failed; retrying once', { records: batch.length, error, ...causeOf(error) })
      try {
        await repository.store(batch)
      } catch (retryError) {
        if (isUnavailable(retryError)) keepSending(batch)
        throw retryError
      }
    }
  }
  const commit = createGroupCommit(store, {
    maxBatch: MAX_BATCH,
    maxQueue: MAX_QUEUE,
    maxInFlight: MAX_IN_FLIGHT,
    overloadedMessage: 'The usage ledger is not keeping up with requests; retry shortly',
  })
  const retainedSince = () => new Date(now().getTime() - settings.retentionDays * DAY_MS).toISOString()

  const sweep = () => sweepOlderThan(repository.deleteOlderThan, retainedSince(), logger, 'usage ledger')
  const sweeping = startPeriodicTask(settings.sweepIntervalMs, sweep, (error) => logger.warn('usage ledger sweep failed; retrying at the next', { error }))

  return {
    retentionDays: settings.retentionDays,
    async write(record, gate) {
      const settlements = gate?.take() ?? []
      const batch = settlements.length > 0 ? options.recovery?.open() : undefined
      const carried: GenerationRecord = batch
        ? { ...record, spend: { batch: batch.id, settlements: settlements.map(({ id, changes }) => ({ id, changes: changes.map((change) => [change.counter.key, change.amount]) })) } }
        : record
      try {
        await commit.add(carried)
      } finally {
        // Sent even when the write failed: the record is retried until it lands, and the answer was paid for.
        const landed = gate?.open()
        if (batch) void landed?.then(batch.landed)
      }
    },
    writeContent: (content) => repository.storeContent(content),
    retainedSince,
    sweep,
    async close() {
      await sweeping.stop()
      await commit.drain()
      if (retrying.size > 0) {
        const grace = unrefSleep(options.closeGraceMs ?? CLOSE_GRACE_MS)
        await Promise.race([Promise.all([...retrying]), grace])
      }
      isClosed = true
      closed()
      await Promise.all([...retrying])
    },
  }
}
