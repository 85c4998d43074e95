/**
 * Sort keys that keep creation order. Timestamps alone tie within a millisecond, and ties fall
 * back to random ids, so a per-process sequence is appended; across processes a tie still orders
 * stably (by id), just not by arrival.
 */

let lastStamp = ''
let sequence = 0

export const creationSortKey = (createdAt: string): string => {
  if (createdAt === lastStamp) sequence++
  else {
    lastStamp = createdAt
    sequence = 0
  }
  return `${createdAt}#${sequence.toString(36).padStart(6, '0')}`
}
