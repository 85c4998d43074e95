/**
 * The opaque keyset cursor of the newest-first lists (`GET /interns`, `GET /audit-log`): the position (sort key, id)
 * of a page's last item. The next page starts strictly after it, so items created or deleted between two requests
 * neither repeat nor push others off a page.
 */

export interface ListPosition {
  sortKey: string
  id: string
}

const SEPARATOR = '|'

// Sort keys (ISO time + sequence) and ids (UUIDs) are ASCII, so btoa needs no UTF-8 step.
export const encodeCursor = (position: ListPosition): string =>
  btoa(`${position.sortKey}${SEPARATOR}${position.id}`).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')

/** The position a cursor names, or `undefined` when it is not one this gateway wrote. */
export const decodeCursor = (cursor: string): ListPosition | undefined => {
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
