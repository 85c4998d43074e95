/**
 * `GET /interns` pages newest first, as OpenRouter's intern API does, with an opaque keyset cursor (cursor.ts): the
 * position (sort key, id) of the last intern of a page. A page's next one starts strictly after it, so
 * interns created or deleted between two requests neither repeat nor push others off a page.
 */

import type { InternRecord } from '../repositories/interns'
import { encodeCursor, type ListPosition } from './cursor'

/** Newest first: later sort keys first, ties by id (descending), the reverse of the store's order. */
const compareNewestFirst = (left: ListPosition, right: ListPosition): number =>
  left.sortKey === right.sortKey ? (left.id < right.id ? 1 : left.id > right.id ? -1 : 0) : left.sortKey < right.sortKey ? 1 : -1

/** One page of `interns` (any order) newest first, after `after` when given. */
export const pageNewestFirst = (interns: readonly InternRecord[], limit: number, after: ListPosition | undefined) => {
  const ordered = [...interns].sort(compareNewestFirst)
  const start = after ? ordered.findIndex((intern) => compareNewestFirst(intern, after) > 0) : 0
  const rest = start < 0 ? [] : ordered.slice(start)
  const page = rest.slice(0, limit)
  const hasMore = rest.length > page.length
  return { page, hasMore, ...(hasMore ? { nextCursor: encodeCursor(page.at(-1)!) } : {}) }
}
