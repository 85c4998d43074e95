/** Read-modify-write over the storage contract's compare-and-set, retried when another writer won. */

import { ServiceUnavailableError, StorageConflictError } from '../core/errors'
import type { JsonObject, RecordInput, StorageDriver, StoredRecord } from '../storage/contract'

/** How long writers of one record keep retrying a lost compare-and-set, and how they space their retries. */
export interface ContentionPolicy {
  /** Give up (503) once this much time has passed since the first attempt. */
  deadlineMs: number
  /** Upper bound of the first back-off; it doubles per lost race up to `maxDelayMs`. */
  baseDelayMs: number
  maxDelayMs: number
  /** For tests: the clock (Unix ms), the pause and the random source of the jitter. */
  clock?: () => number
  sleep?: (ms: number) => Promise<void>
  random?: () => number
}

/**
 * A few seconds: long enough for 30 writers of one record on a networked store to each get their
 * turn, short enough to answer well before clients and the intern routes' 10 s timeout give up.
 */
export const DEFAULT_CONTENTION_POLICY: ContentionPolicy = { deadlineMs: 5_000, baseDelayMs: 2, maxDelayMs: 100 }

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const isLostRace = (error: unknown) => error instanceof StorageConflictError && error.kind === 'version'

/**
 * Runs `attempt` until it does not lose a compare-and-set race, backing off with full jitter
 * (a random pause up to a bound that doubles per lost race) so contenders spread out instead of
 * colliding again. Past the deadline the caller gets a 503 with `Retry-After`, never a 409 that
 * would blame their request: it was valid, the record was just busy.
 */
export const retryLostRaces = async <R>(attempt: () => Promise<R>, policy: ContentionPolicy = DEFAULT_CONTENTION_POLICY): Promise<R> => {
  const clock = policy.clock ?? Date.now
  const pause = policy.sleep ?? sleep
  const random = policy.random ?? Math.random
  const deadline = clock() + policy.deadlineMs
  for (let lost = 0; ; lost++) {
    try {
      return await attempt()
    } catch (error) {
      if (!isLostRace(error)) throw error
      if (clock() >= deadline) {
        throw new ServiceUnavailableError('The record is being changed by other requests; retry shortly', { cause: error })
      }
      await pause(random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** lost))
    }
  }
}

/**
 * Applies `change` to the current record and writes it with compare-and-set, re-reading and
 * re-applying on a version conflict until `policy`'s deadline. `change` must be a pure function of
 * the record it is given. Resolves `null` when the record does not exist (or `change` returns `null` to abort).
 */
export const updateRecord = <T extends JsonObject>(
  storage: StorageDriver,
  collection: string,
  id: string,
  change: (current: StoredRecord<T>) => RecordInput<T> | null,
  policy?: ContentionPolicy,
): Promise<StoredRecord<T> | null> =>
  retryLostRaces(async () => {
    const current = await storage.get<T>(collection, id)
    if (!current) return null
    const next = change(current)
    if (!next) return null
    return storage.update(collection, id, current.version, next)
  }, policy)

/** True when `error` is a storage unique-key conflict. */
export const isUniqueConflict = (error: unknown): boolean =>
  error instanceof StorageConflictError && error.kind === 'unique'

/** Drops `undefined` entries, so "omitted" never overwrites a stored value (omitted means unchanged). */
export const withoutUndefined = <T extends object>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>
