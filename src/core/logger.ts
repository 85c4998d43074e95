/** The gateway's logging seam. Never pass raw keys, key hashes of callers, or request bodies. */

export type LogFields = Record<string, unknown>

export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
  /** Whether entries at `level` are kept, so callers can skip building what would be dropped; kept when absent. */
  isEnabled?(level: LogLevel): boolean
}

const LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LEVELS)[number]

/** Whether `logger` keeps entries at `level` (a logger that does not say keeps everything). */
export const isLogLevelEnabled = (logger: Logger, level: LogLevel): boolean => logger.isEnabled?.(level) ?? true

const describeError = (value: unknown): unknown =>
  value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value

const toConsole = (line: string) => console.error(line)

/** One JSON line per entry, at or above `level`, on stderr (or to `writeLine`, which the runner batches). */
export const createConsoleLogger = (level: LogLevel = 'info', writeLine: (line: string) => void = toConsole): Logger => {
  const threshold = LEVELS.indexOf(level)
  const write = (entryLevel: LogLevel) => (message: string, fields: LogFields = {}) => {
    if (LEVELS.indexOf(entryLevel) < threshold) return
    const entry: LogFields = { level: entryLevel, time: new Date().toISOString(), message }
    for (const [name, value] of Object.entries(fields)) entry[name] = describeError(value)
    writeLine(JSON.stringify(entry))
  }
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    isEnabled: (entryLevel) => LEVELS.indexOf(entryLevel) >= threshold,
  }
}

/** Discards everything; for tests and hosts with their own logging. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, isEnabled: () => false }
