/**
 * Runner configuration: command-line flags win over environment variables, which win over a
 * JSON config file, which wins over defaults. Validated once; errors name the setting.
 */

import { readFile } from 'node:fs/promises'
import * as v from 'valibot'
import { parseInput } from '../core/validation'
import { MODEL_SLUG_PATTERN } from '../core/patterns'

const PortSchema = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535))

export const RunnerConfigSchema = v.strictObject({
  port: v.optional(PortSchema, 8787),
  host: v.optional(v.pipe(v.string(), v.minLength(1)), '127.0.0.1'),
  basePath: v.optional(v.string(), '/api/v1'),
  /** `file` (the embedded on-disk store, default) or `memory` (lost on exit). */
  storage: v.optional(v.picklist(['file', 'memory'], 'must be "file" or "memory"'), 'file'),
  dataDir: v.optional(v.pipe(v.string(), v.minLength(1)), '.modelgate'),
  bodyLimit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024))),
  logLevel: v.optional(v.picklist(['debug', 'info', 'warn', 'error']), 'info'),
  /** Raw management key ensured at start (never logged). */
  managementKey: v.optional(v.string()),
  /** Seconds to let in-flight requests finish on shutdown. */
  shutdownGraceSeconds: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(600)), 10),
  workspaceDefaults: v.optional(
    v.strictObject({
      textModel: v.optional(v.pipe(v.string(), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'))),
      imageModel: v.optional(v.pipe(v.string(), v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'))),
      providerSort: v.optional(v.picklist(['price', 'throughput', 'latency', 'exacto'])),
    }),
  ),
})

export type RunnerConfig = v.InferOutput<typeof RunnerConfigSchema>
type RunnerConfigInput = v.InferInput<typeof RunnerConfigSchema>

/** The environment variables the runner reads, and the setting each one fills. */
export const ENVIRONMENT = {
  // Listed first so that MODELGATE_PORT, read later, wins over the generic PORT.
  PORT: 'port',
  MODELGATE_PORT: 'port',
  MODELGATE_HOST: 'host',
  MODELGATE_BASE_PATH: 'basePath',
  MODELGATE_STORAGE: 'storage',
  MODELGATE_DATA_DIR: 'dataDir',
  MODELGATE_BODY_LIMIT: 'bodyLimit',
  MODELGATE_LOG_LEVEL: 'logLevel',
  MODELGATE_MANAGEMENT_KEY: 'managementKey',
  MODELGATE_SHUTDOWN_GRACE_SECONDS: 'shutdownGraceSeconds',
} as const satisfies Record<string, keyof RunnerConfigInput>

const NUMERIC = new Set<keyof RunnerConfigInput>(['port', 'bodyLimit', 'shutdownGraceSeconds'])

const fromStrings = (entries: Array<[keyof RunnerConfigInput, string | undefined]>): Partial<RunnerConfigInput> => {
  const config: Record<string, unknown> = {}
  for (const [setting, raw] of entries) {
    if (raw === undefined || raw === '') continue
    config[setting] = NUMERIC.has(setting) && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw
  }
  return config as Partial<RunnerConfigInput>
}

export const configFromEnvironment = (environment: Record<string, string | undefined>): Partial<RunnerConfigInput> =>
  fromStrings(Object.entries(ENVIRONMENT).map(([name, setting]) => [setting, environment[name]]))

export const readConfigFile = async (path: string): Promise<Partial<RunnerConfigInput>> => {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new Error(`modelgate: cannot read config file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  try {
    return JSON.parse(text) as Partial<RunnerConfigInput>
  } catch {
    throw new Error(`modelgate: config file ${path} is not valid JSON`)
  }
}

/** Merges the sources (later wins) and validates the result. */
export const resolveConfig = (...sources: Array<Partial<RunnerConfigInput>>): RunnerConfig => {
  const merged = Object.assign({}, ...sources)
  try {
    return parseInput(RunnerConfigSchema, merged, 'options')
  } catch (error) {
    throw new Error(`modelgate: invalid configuration: ${(error as Error).message.replace(/^options\./, '')}`)
  }
}

export const flagsToConfig = (flags: Record<string, string | boolean | undefined>): Partial<RunnerConfigInput> => ({
  ...fromStrings([
    ['port', flags.port as string | undefined],
    ['host', flags.host as string | undefined],
    ['basePath', flags['base-path'] as string | undefined],
    ['dataDir', flags['data-dir'] as string | undefined],
    ['logLevel', flags['log-level'] as string | undefined],
  ]),
  ...(flags.memory ? { storage: 'memory' as const } : {}),
})
