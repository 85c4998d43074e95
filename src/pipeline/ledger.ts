/**
 * The usage ledger (docs/decisions.md, Usage ledger): generation records written through one group commit per
 * gateway, so requests finishing together share a store round trip, and a retention sweep that deletes the
 * oldest records in bounded pages.
 */

import { createGroupCommit } from '../core/group-commit'
import type { Logger } from '../core/logger'
import type { GenerationContentRecord, GenerationRecord, GenerationsRepository } from '../repositories/generations'

export const DEFAULT_RETENTION_DAYS = 30
export const DEFAULT_LEDGER_SWEEP_INTERVAL_MS = 10 * 60_000

const DAY_MS = 86_400_000
/** A write carries at most this many records: one Lua script, one multi-row insert. */
const MAX_BATCH = 100
/** Records waiting beyond this answer 503: a store that stopped answering must not grow memory without bound. */
const MAX_QUEUE = 10_000
/** Writes under way at once: below it a record goes out at once, above it records wait and share the next. */
const MAX_IN_FLIGHT = 4
/** One sweep deletes at most this many pages; the next sweep carries on. */
const SWEEP_PAGE_SIZE = 200
const SWEEP_MAX_PAGES = 50

export interface LedgerSettings {
  /** Days a record is kept (and shown) after its request. */
  retentionDays: number
  /** How often this process sweeps expired records; `false` for never (another process sweeps). */
  sweepIntervalMs: number | false
}

export interface Ledger {
  readonly retentionDays: number
  /** Stores a record together with others finishing now; resolves once it is stored (once, whatever the retries). */
  write(record: GenerationRecord): Promise<void>
  /** Stores what a generation said, for a workspace with private logging on (after its record). */
  writeContent(content: GenerationContentRecord): Promise<void>
  /** The oldest creation time (ISO 8601) still kept: older records are never shown and are swept. */
  retainedSince(): string
  /** Deletes expired records, at most a bounded number per call; resolves with how many went. */
  sweep(): Promise<number>
  /** Stops the sweep and waits for the writes accepted so far. */
  close(): Promise<void>
}

export const createLedger = (repository: GenerationsRepository, settings: LedgerSettings, now: () => Date, logger: Logger): Ledger => {
  const store = async (batch: GenerationRecord[]) => {
    try {
      await repository.store(batch)
    } catch (error) {
      // The write may have happened before the store failed to answer; ids already stored are left as they are,
      // so sending the batch again cannot record anything twice.
      logger.warn('usage ledger write failed; retrying once', { records: batch.length, error })
      await repository.store(batch)
    }
  }
  const commit = createGroupCommit(store, {
    maxBatch: MAX_BATCH,
    maxQueue: MAX_QUEUE,
    maxInFlight: MAX_IN_FLIGHT,
    overloadedMessage: 'The usage ledger is not keeping up with requests; retry shortly',
  })
  const retainedSince = () => new Date(now().getTime() - settings.retentionDays * DAY_MS).toISOString()

  const sweep = async (): Promise<number> => {
    const before = retainedSince()
    let deleted = 0
    for (let page = 0; page < SWEEP_MAX_PAGES; page++) {
      const outcome = await repository.deleteOlderThan(before, SWEEP_PAGE_SIZE)
      deleted += outcome.deleted
      if (!outcome.hasMore) return deleted
    }
    logger.info('usage ledger sweep stopped at its bound; the next sweep continues', { deleted })
    return deleted
  }

  let sweeping: Promise<void> | undefined
  const timer =
    settings.sweepIntervalMs === false
      ? undefined
      : setInterval(() => {
          if (sweeping) return
          sweeping = sweep()
            .then(
              () => {},
              (error: unknown) => logger.warn('usage ledger sweep failed; retrying at the next', { error }),
            )
            .finally(() => {
              sweeping = undefined
            })
        }, settings.sweepIntervalMs)
  // A sweep must not hold a process open on its own (Node and Bun timers can be unref'd).
  ;(timer as { unref?: () => void } | undefined)?.unref?.()

  return {
    retentionDays: settings.retentionDays,
    write: (record) => commit.add(record),
    writeContent: (content) => repository.storeContent(content),
    retainedSince,
    sweep,
    async close() {
      clearInterval(timer)
      await sweeping
      await commit.drain()
    },
  }
}
