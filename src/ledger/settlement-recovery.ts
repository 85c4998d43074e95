/**
 * Settlements sent again from their records (docs/decisions.md, "Books that balance"). A settlement that charges an
 * answer is sent only once the answer's usage record landed, and the record carries it (src/engine/spend-book.ts
 * gates). A process killed between the two leaves a record whose settlements may never have been sent: its hold's
 * lease runs out and gives back what it held, but the answer's cost would be missing from the counters.
 *
 * So each process says, in a record of its own rewritten every few seconds, up to which ten-second period every
 * settlement its records carry has landed; the records carry the process and the period they were written in. A
 * process whose record stopped being rewritten died: any other sends again the settlements of its records from the
 * periods after that, and deletes its record. The store applies a settlement once per id while it remembers the id
 * (src/storage/contract.ts), so those that had landed change nothing; past that memory one sent again could count
 * twice, and the gateway logs them for the operator instead.
 */

import type { Logger } from '../core/logger'
import { causeOf, startPeriodicTask } from '../core/periodic'
import type { SpendBook } from '../engine/spend-book'
import type { GenerationsRepository, GenerationSpend } from '../repositories/generations'
import { counterOfKey } from '../repositories/spend-counters'
import type { SpendOwnerRecord, SpendOwnersRepository } from '../repositories/spend-owners'

/** Records are grouped by the ten seconds they were written in. */
export const SPEND_PERIOD_MS = 10_000
/** How often a process rewrites its record, and looks for processes that stopped rewriting theirs. */
export const DEFAULT_SPEND_BEAT_MS = 5_000
/** A process whose record was not rewritten for this many beats is taken for dead. */
const BEATS_BEFORE_DEAD = 3
/** Kept between a period's end and the store forgetting its settled ids: a settlement is sent again only before. */
const MEMORY_MARGIN_MS = 10_000
/** Most periods one recovery reads of one dead process (an hour): a process that had settled nothing for longer left more than a sweep should read. */
const MAX_PERIODS = 360

export interface SettlementBatch {
  /** What the record carries as `GenerationSpend.batch`. */
  id: string
  /** Its settlements all landed. */
  landed(): void
}

export interface SettlementRecovery {
  /** The batch of a record about to carry settlements. */
  open(): SettlementBatch
  /** Sends again what dead processes' records carry; resolves with how many settlements. */
  recover(): Promise<number>
  /** Stops; deletes this process's record when everything its records carry landed. Call after the spend book closed. */
  close(): Promise<void>
}

export interface SettlementRecoveryOptions {
  generations: GenerationsRepository
  owners: SpendOwnersRepository
  book: SpendBook
  logger: Logger
  /** Unix ms. */
  now: () => number
  /** How long the store remembers a settled id (src/storage/contract.ts `settlementMemoryOf`). */
  settlementMemoryMs: number
  /** How often this process beats (default 5 s). */
  beatMs?: number
}

const periodOf = (ms: number) => Math.floor(ms / SPEND_PERIOD_MS)

/** A process id as logs show it. */
const shortOwner = (owner: string) => owner.slice(0, 11)

type Settlement = GenerationSpend['settlements'][number] & { generationId: string }

export const createSettlementRecovery = (options: SettlementRecoveryOptions): SettlementRecovery => {
  const { generations, owners, book, logger, now } = options
  const beatMs = options.beatMs ?? DEFAULT_SPEND_BEAT_MS
  /** Records of each period whose settlements have not all landed. */
  const pending = new Map<number, number>()

  const settledThrough = () => {
    let oldest = periodOf(now())
    for (const period of pending.keys()) oldest = Math.min(oldest, period)
    return oldest - 1
  }

  const beat = () => owners.beat({ owner: book.owner, heartbeatAt: now(), settledThrough: settledThrough() })

  const settlementsOf = async (owner: string, first: number, last: number) => {
    const found = new Map<number, Settlement[]>()
    for (let period = first; period <= last; period++) {
      const settlements: Settlement[] = []
      for await (const record of generations.listSpendBatch(`${owner}|${period}`)) {
        for (const settlement of record.spend?.settlements ?? []) settlements.push({ ...settlement, generationId: record.id })
      }
      if (settlements.length > 0) found.set(period, settlements)
    }
    return found
  }

  const sendAgain = (settlements: readonly Settlement[]) =>
    Promise.all(settlements.map(({ id, changes }) => book.settle(id, changes.map(([key, amount]) => ({ counter: counterOfKey(key), amount })))))

  /** Sends again what the dead process `record` left; resolves with how many settlements. */
  const recoverOwner = async (record: SpendOwnerRecord): Promise<number> => {
    // It wrote records until its next beat at the latest.
    const last = periodOf(record.heartbeatAt + beatMs)
    const first = Math.max(record.settledThrough + 1, last - MAX_PERIODS)
    let sent = 0
    for (const [period, settlements] of await settlementsOf(record.owner, first, last)) {
      // Settled no earlier than the period began: the store remembers them until its memory has passed from then.
      if (now() < (period * SPEND_PERIOD_MS) + options.settlementMemoryMs - MEMORY_MARGIN_MS) {
        await sendAgain(settlements)
        sent += settlements.length
      } else {
        logger.error('spend settlements of a stopped gateway process may not have landed and are too old to send again safely; check them against the counters', {
          owner: shortOwner(record.owner),
          settlements: settlements.map(({ id, generationId, changes }) => ({ id, generationId, changes: changes.length })),
        })
      }
    }
    if (sent > 0) logger.info('spend settlements of a stopped gateway process sent again from their usage records', { owner: shortOwner(record.owner), settlements: sent })
    return sent
  }

  const recover = async () => {
    let sent = 0
    for (const { record, version } of await owners.list()) {
      if (record.owner === book.owner || now() - record.heartbeatAt < beatMs * BEATS_BEFORE_DEAD) continue
      sent += await recoverOwner(record)
      // Still at the version read: a process that was only slow writes its record again at its next beat.
      await owners.remove(record.owner, version)
    }
    return sent
  }

  const beating = startPeriodicTask(
    beatMs,
    async () => {
      await beat()
      await recover()
    },
    (error) => logger.warn('spend settlement recovery failed; trying again later', { error, ...causeOf(error) }),
  )
  beating.run()

  return {
    open() {
      const period = periodOf(now())
      pending.set(period, (pending.get(period) ?? 0) + 1)
      let isLanded = false
      return {
        id: `${book.owner}|${period}`,
        landed() {
          if (isLanded) return
          isLanded = true
          const left = (pending.get(period) ?? 1) - 1
          if (left > 0) pending.set(period, left)
          else pending.delete(period)
        },
      }
    },
    recover,
    async close() {
      await beating.stop()
      // What is still pending never landed (the store is down): left for another process to send again.
      if (pending.size === 0) await owners.remove(book.owner).catch((error: unknown) => logger.warn('spend owner record not removed', { error }))
      else await beat().catch(() => {})
    },
  }
}
