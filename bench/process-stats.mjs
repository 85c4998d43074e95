// @ts-check
/**
 * Answers the bench parent's IPC requests in a child process: CPU time and memory on `stats`,
 * a clean exit on `exit` (so `--cpu-prof` gets to write its profile). Shared by every server the
 * bench starts, so all of them are measured the same way.
 */

/**
 * @param {() => Promise<void> | void} close  stops the server before the process exits
 * @param {() => Record<string, number>} [extra]  more figures of this server, sent with every `stats` answer
 */
export const answerStatsRequests = (close, extra) => {
  process.on('message', async (/** @type {{ type: string, id?: number, shouldCollect?: boolean }} */ message) => {
    if (message.type === 'stats') {
      // Only at the end of a run: a full collection shows the live heap, what a leak would grow.
      const gc = /** @type {(() => void) | undefined} */ (globalThis.gc)
      if (message.shouldCollect) gc?.()
      const cpu = process.cpuUsage()
      process.send?.({
        type: 'stats',
        id: message.id,
        cpuMicros: cpu.user + cpu.system,
        rssBytes: process.memoryUsage.rss(),
        // Peak resident set since the process started (kilobytes on every platform Node supports).
        maxRssBytes: process.resourceUsage().maxRSS * 1024,
        heapUsedBytes: process.memoryUsage().heapUsed,
        ...extra?.(),
      })
    } else if (message.type === 'exit') {
      await close()
      process.exit(0)
    }
  })
  // The parent went away (crash, Ctrl-C): never outlive it.
  process.on('disconnect', () => process.exit(0))
}

/** Tells the parent where this server listens. */
export const reportReady = (/** @type {Record<string, unknown>} */ fields) => process.send?.({ type: 'ready', ...fields })
