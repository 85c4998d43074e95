/**
 * Warns when the runner's heap nears Node's limit. The memory store and the embedded file store of earlier versions
 * keep their whole state in the heap (docs/decisions.md, "The embedded store keeps its state in the process's
 * memory"; the memory store caps its usage records), so steady traffic with a long ledger retention can reach the
 * limit, where Node stops the process. The warning says so while there is still time to shorten the retention, raise
 * the limit or move to a store whose records live outside the heap (SQLite, the default, or a networked one).
 */
import { getHeapStatistics } from 'node:v8'
import type { Logger } from '../core/logger'

export interface HeapWatchOptions {
  /** Which store the runner uses, named in the warning. */
  storage: 'memory' | 'file'
  /** How often the heap is read (default one minute). */
  intervalMs?: number
  /** Share of the limit that triggers the warning (default 0.75). */
  threshold?: number
  /** Reads the heap (default `v8.getHeapStatistics`); tests pass their own. */
  heapStatistics?: () => { used_heap_size: number; heap_size_limit: number }
}

const MEGABYTE = 1024 * 1024
/** Below this share of the threshold the watch warns again next time the heap climbs, not at every reading above it. */
const REARM_SHARE = 0.9

/** Starts watching; answers the function that stops it. The timer never keeps the process alive. */
export const watchHeap = (logger: Logger, options: HeapWatchOptions): (() => void) => {
  const threshold = options.threshold ?? 0.75
  const readHeap = options.heapStatistics ?? getHeapStatistics
  let hasWarned = false
  const check = () => {
    const { used_heap_size: used, heap_size_limit: limit } = readHeap()
    const share = used / limit
    if (share < threshold * REARM_SHARE) hasWarned = false
    if (share < threshold || hasWarned) return
    hasWarned = true
    logger.warn(
      `the heap is at ${Math.round(share * 100)} % of Node's limit; the ${options.storage} store keeps every record in memory, ` +
        'usage records included: use the SQLite store (MODELGATE_STORAGE=sqlite, the default), Redis or SQL, shorten ledger retention ' +
        '(MODELGATE_LEDGER_RETENTION_DAYS) or raise the limit (node --max-old-space-size)',
      { heapUsedMB: Math.round(used / MEGABYTE), heapLimitMB: Math.round(limit / MEGABYTE), storage: options.storage },
    )
  }
  const timer = setInterval(check, options.intervalMs ?? 60_000)
  timer.unref()
  return () => clearInterval(timer)
}
