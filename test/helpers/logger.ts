import type { LogFields, Logger } from '../../src/core/logger'

export interface LogEntry {
  level: keyof Logger
  message: string
  fields: LogFields | undefined
}

/** A logger that keeps every entry, for tests that assert what was (or was not) logged. */
export const recordingLogger = () => {
  const entries: LogEntry[] = []
  const record = (level: keyof Logger) => (message: string, fields?: LogFields) => void entries.push({ level, message, fields })
  const logger: Logger = { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') }
  return { logger, entries }
}
