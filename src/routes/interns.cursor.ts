/**
 * `GET /interns` pages newest first, as OpenRouter's intern API does, with an opaque keyset cursor: the
 * position (sort key, id) of the last intern of a page. A page's next one starts strictly after it, so
 * interns created or deleted between two requests neither repeat nor push others off a page.
 */

import type { InternRecord } from '../repositories/interns'

export interface InternPosition {
  sortKey: string
  id: string
}

const SEPARATOR = '|'

// Sort keys (ISO time + sequence) and ids (UUIDs) are ASCII, so btoa needs no UTF-8 step.
export const encodeInternCursor = (intern: InternPosition): string =>
  btoa(`${intern.sortKey}${SEPARATOR}${intern.id}`).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')

/** The position a cursor names, or `undefined` when it is not one this gateway wrote. */
export const decodeInternCursor = (cursor: string): InternPosition | undefined => {
  let text: string
  try {
    text = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'))
  } catch {
    return undefined
  }
  const separator = text.lastIndexOf(SEPARATOR)
  if (separator <= 0 || separator === text.length - 1) return undefined
  return { sortKey: text.slice(0, separator), id: text.slice(separator + 1) }
}

/** Newest first: later sort keys first, ties by id (descending), the reverse of the store's order. */
const compareNewestFirst = (left: InternPosition, right: InternPosition): number =>
  left.sortKey === right.sortKey ? (left.id < right.id ? 1 : left.id > right.id ? -1 : 0) : left.sortKey < right.sortKey ? 1 : -1

/** One page of `interns` (any order) newest first, after `after` when given. */
export const pageNewestFirst = (interns: readonly InternRecord[], limit: number, after: InternPosition | undefined) => {
  const ordered = [...interns].sort(compareNewestFirst)
  const start = after ? ordered.findIndex((intern) => compareNewestFirst(intern, after) > 0) : 0
  const rest = start < 0 ? [] : ordered.slice(start)
  const page = rest.slice(0, limit)
  const hasMore = rest.length > page.length
  return { page, hasMore, ...(hasMore ? { nextCursor: encodeInternCursor(page.at(-1)!) } : {}) }
}
