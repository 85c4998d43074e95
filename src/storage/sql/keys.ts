/**
 * Limits on the strings the SQL driver stores in key columns. MySQL/MariaDB keep them in VARBINARY
 * columns whose indexes must fit InnoDB's 3072-byte key limit, so lengths are counted in UTF-8
 * bytes; PostgreSQL gets the same limits so data can move between the two. A key the database
 * could not store exactly (a NUL, which PostgreSQL text refuses, or a lone surrogate, which has no
 * UTF-8 form) is refused too, rather than truncated or silently replaced.
 */
import type { StoredRecord } from '../contract'

/** Maximum UTF-8 bytes per key column; the schema in `migrations.ts` is sized from these. */
export const KEY_LIMITS = {
  collection: 255,
  id: 512,
  uniqueKey: 1024,
  indexField: 255,
  indexValue: 1024,
  sortKey: 1024,
  counterKey: 1024,
  holdOwner: 255,
} as const

/** In a `u` regex a surrogate range matches only unpaired halves. */
const UNSTORABLE = /[\0\uD800-\uDFFF]/u

const problemWith = (value: string, maxBytes: number): string | undefined => {
  if (UNSTORABLE.test(value)) return 'must not contain NUL characters or unpaired surrogates'
  if (Buffer.byteLength(value, 'utf8') > maxBytes) return `must be at most ${maxBytes} bytes in UTF-8`
  return undefined
}

/** True when `value` can be stored in a key column of `maxBytes`; reads of other keys find nothing. */
export const isStorableKey = (value: string, maxBytes: number): boolean => problemWith(value, maxBytes) === undefined

/** Throws a `TypeError` naming `name` unless `value` fits a key column of `maxBytes`. */
export const assertStorableKey = (value: string, name: string, maxBytes: number): void => {
  const problem = problemWith(value, maxBytes)
  if (problem) throw new TypeError(`modelgate storage: ${name} ${problem}`)
}

/** Checks every key of a record (its input checked already by the front door, src/storage/checked.ts) against the column limits. */
export const assertStorableRecord = (collection: string, record: StoredRecord): void => {
  assertStorableKey(collection, 'collection', KEY_LIMITS.collection)
  assertStorableKey(record.id, 'id', KEY_LIMITS.id)
  assertStorableKey(record.sortKey, 'input.sortKey', KEY_LIMITS.sortKey)
  for (const key of record.uniques) assertStorableKey(key, 'input.uniques', KEY_LIMITS.uniqueKey)
  for (const [field, value] of Object.entries(record.indexes)) {
    assertStorableKey(field, 'input.indexes field name', KEY_LIMITS.indexField)
    assertStorableKey(value, `input.indexes.${field}`, KEY_LIMITS.indexValue)
  }
}
