import type { LogFields, LogLevel, Logger } from '../../src/core/logger'

export interface LogEntry {
  level: LogLevel
  message: string
  fields: LogFields | undefined
}

export interface RecordingLogger {
  logger: Logger
  entries: LogEntry[]
  /** Everything logged as one text, errors expanded with their message, stack and causes, for leak checks. */
  text(): string
}

const expand = (value: unknown, depth = 0): unknown => {
  if (depth > 8) return '…'
  if (value instanceof Error) {
    return { name: value.name, message: value.message, stack: value.stack, cause: expand(value.cause, depth + 1), ...expand({ ...value }, depth + 1) as object }
  }
  if (Array.isArray(value)) return value.map((item) => expand(item, depth + 1))
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, expand(item, depth + 1)]))
  return value
}

/** A logger that keeps every entry, as a host's logger would receive it, for tests of what was (or was not) logged. */
export const createRecordingLogger = (): RecordingLogger => {
  const entries: LogEntry[] = []
  const record = (level: LogLevel) => (message: string, fields?: LogFields) => void entries.push({ level, message, fields })
  return {
    logger: { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') },
    entries,
    text: () => JSON.stringify(expand(entries)),
  }
}
