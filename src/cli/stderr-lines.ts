/**
 * The runner's log lines on stderr, the lines of one turn of the event loop in one write: at the default level each
 * request logs a line, and a write per line (what `console.error` does) costs a system call each. Writes stay at most
 * `PIPE_BUF` (4096 bytes) where the lines allow, cut at line ends, so the workers of `serve --workers`, which share
 * one stderr, never interleave within a line on a pipe. What is left is written when the process exits; only a
 * process killed outright (`kill -9`) loses the lines of its last turn.
 */
import { Buffer } from 'node:buffer'

/** Linux's `PIPE_BUF`: a pipe write up to this size is never split by another process's write. */
const ATOMIC_WRITE_BYTES = 4096

export const createStderrLines = (write: (text: string) => void = (text) => void process.stderr.write(text)) => {
  let pending: string[] = []
  let isScheduled = false

  const flush = () => {
    isScheduled = false
    const lines = pending
    pending = []
    let chunk = ''
    let chunkBytes = 0
    for (const line of lines) {
      const bytes = Buffer.byteLength(line)
      if (chunkBytes > 0 && chunkBytes + bytes > ATOMIC_WRITE_BYTES) {
        write(chunk)
        chunk = ''
        chunkBytes = 0
      }
      chunk += line
      chunkBytes += bytes
    }
    if (chunkBytes > 0) write(chunk)
  }

  process.on('exit', flush)
  return {
    writeLine(line: string) {
      pending.push(`${line}\n`)
      if (isScheduled) return
      isScheduled = true
      setImmediate(flush).unref()
    },
    flush,
  }
}

let shared: ReturnType<typeof createStderrLines> | undefined

/**
 * The runner's one stream of log lines. Whatever the runner prints itself (the listening line on stdout, a fatal
 * error) flushes it first, so its lines and the log's stay in the order they happened.
 */
export const runnerLog = () => (shared ??= createStderrLines())

