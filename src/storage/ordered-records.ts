/**
 * Records kept in list order (`compareRecords`: sortKey, then id) for the memory engine, so a listing reads a
 * page instead of sorting the whole collection each time: the usage ledger's activity pages and retention sweep
 * list collections of hundreds of thousands of records. Sorting is lazy: records that arrive in order (or nearly,
 * as requests finish a little out of order) are placed at once, and a bulk load in another order is sorted once,
 * at the next read.
 */
import type { StoredRecord } from './contract'
import { compareRecords } from './validate'

export interface OrderedRecords {
  /** The records from `start` on; the ones before it were removed from the front and are cut off at the next read. */
  items: StoredRecord[]
  start: number
  isSorted: boolean
}

/** An out-of-order record this close to the end is spliced into place; further back, the list is sorted at the next read. */
const SPLICE_DISTANCE = 4096

export const createOrderedRecords = (): OrderedRecords => ({ items: [], start: 0, isSorted: true })

export const recordCount = (list: OrderedRecords): number => list.items.length - list.start

/** The first position from `start` whose record sorts at or after `record` (the list must be sorted). */
const lowerBound = (list: OrderedRecords, record: StoredRecord): number => {
  const { items } = list
  let low = list.start
  let high = items.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (compareRecords(items[middle]!, record) < 0) low = middle + 1
    else high = middle
  }
  return low
}

const cutFront = (list: OrderedRecords): void => {
  list.items = list.items.slice(list.start)
  list.start = 0
}

/** The records in list order, as an array the caller must not change. */
export const sortedItems = (list: OrderedRecords): StoredRecord[] => {
  if (list.start > 0) cutFront(list)
  if (!list.isSorted) {
    list.items.sort(compareRecords)
    list.isSorted = true
  }
  return list.items
}

/** The first `count` records in list order, without cutting off the front (which the next read does anyway). */
export const firstRecords = (list: OrderedRecords, count: number): StoredRecord[] => {
  if (!list.isSorted) sortedItems(list)
  return list.items.slice(list.start, list.start + count)
}

export const insertRecord = (list: OrderedRecords, record: StoredRecord): void => {
  const { items } = list
  const last = items[items.length - 1]
  if (list.isSorted && last !== undefined && compareRecords(last, record) > 0) {
    const at = lowerBound(list, record)
    if (items.length - at <= SPLICE_DISTANCE) {
      items.splice(at, 0, record)
      return
    }
    list.isSorted = false
  }
  items.push(record)
}

/** Removes `record` (the object the list holds); answers whether the list is empty now. */
export const removeRecord = (list: OrderedRecords, record: StoredRecord): boolean => {
  if (!list.isSorted) sortedItems(list)
  const at = lowerBound(list, record)
  if (list.items[at] === record) {
    // The retention sweep removes the oldest records, at the front: moving `start` costs nothing, where a splice
    // would move every record after it.
    if (at === list.start) list.start++
    else list.items.splice(at, 1)
    if (list.start > list.items.length / 2) cutFront(list)
  }
  return recordCount(list) === 0
}

/** Puts `record` where `previous` was: they sort alike (same sortKey and id). */
export const replaceRecord = (list: OrderedRecords, previous: StoredRecord, record: StoredRecord): void => {
  if (!list.isSorted) sortedItems(list)
  const at = lowerBound(list, previous)
  if (list.items[at] === previous) list.items[at] = record
  else insertRecord(list, record)
}
