/**
 * What the runner says when it starts: where state lives, which providers are configured (ids only, never
 * keys), what will not work as configured, and in development mode what production still needs.
 */

import { resolve } from 'node:path'
import type { Logger } from '../core/logger'
import { DEMO_MODELS } from '../gateway/demo-models'
import { mergeModels, type ModelEntry } from '../engine/models'
import type { RunnerConfig } from './config'
import { describeStorage, sqlitePathOf } from './storage'
import { cliCommand } from './cli-command'
import { unknownVariableWarnings } from './variables'

type ProviderSettings = Record<string, Record<string, unknown>>

/** The store as the log shows it: its kind, and for the on-disk stores where they are (URLs masked). */
export const describeStore = (config: RunnerConfig): Record<string, string> => {
  const sqlitePath = sqlitePathOf(config)
  if (sqlitePath !== undefined) return { storage: 'sqlite', path: sqlitePath }
  if (config.storage === 'file') return { storage: 'file', dataDir: resolve(config.dataDir) }
  if (config.storage === 'memory') return { storage: 'memory' }
  return { storage: describeStorage(config.storage) }
}

/** Configured providers that can serve without a caller's own key: a shared key, or none needed. */
const sharedProviders = (providers: ProviderSettings): string[] =>
  Object.entries(providers)
    .filter(([, settings]) => Boolean(settings.apiKey) || settings.isKeyless === true)
    .map(([id]) => id)

/** Warnings about provider set-ups that cannot work: a configured provider that no model routes to. */
export const providerWarnings = (providers: ProviderSettings, models: readonly ModelEntry[], hasDemoModels = false): string[] => {
  const routed = new Set(mergeModels(models).flatMap((model) => model.endpoints.map((endpoint) => endpoint.provider.split('/', 1)[0]!)))
  const warnings = Object.keys(providers)
    .filter((id) => !routed.has(id))
    .map((id) => {
      const name = id.toUpperCase().replaceAll('-', '_')
      return (
        `provider "${id}" is configured but no model uses it: list its models with ` +
        `MODELGATE_PROVIDER_${name}_MODELS=<author>/<name>=<upstream model id>,… or add a "models" entry to the config file`
      )
    })
  if (sharedProviders(providers).length === 0) {
    warnings.push(
      'no provider has a shared API key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, MODELGATE_PROVIDER_<ID>_API_KEY, …): ' +
        `only ${hasDemoModels ? `the demo models (${DEMO_MODELS.join(', ')}) and ` : ''}requests from workspaces with their own keys (BYOK) can be served`,
    )
  }
  return warnings
}

/** In development mode, what a production deployment would still need, one plain sentence each. */
export const productionGaps = (config: RunnerConfig): string[] => {
  const gaps: string[] = []
  if (!config.encryptionKeys?.length) {
    gaps.push(
      `encryption keys: set MODELGATE_ENCRYPTION_KEYS (make one with \`${cliCommand('secrets generate-key')}\`); ` +
        'development mode seals BYOK keys with a generated key kept in the data directory',
    )
  }
  if (!config.managementKey) {
    gaps.push(
      'a management key of your own: set MODELGATE_MANAGEMENT_KEY (kept in your secret manager), ' +
        `or mint one with \`${cliCommand('keys create --management')}\``,
    )
  }
  // The SQLite store serves every process on its machine: a production set-up of its own, up to one machine.
  if (config.storage === 'file' || config.storage === 'memory') {
    gaps.push(
      `a store that keeps state for several processes: the ${config.storage === 'file' ? 'embedded file store serves one process' : 'memory store keeps nothing'}; ` +
        'use MODELGATE_STORAGE=sqlite (the default, processes on one machine), or redis://…, postgres://… or mysql://… (several machines)',
    )
  }
  return gaps
}

/** Whether the runner serves the demo models: as configured, else in development mode only. */
export const isDemoOn = (config: RunnerConfig): boolean => config.demoModels ?? config.dev

/** Logs the start-up summary and every warning. */
export const logStartup = (
  logger: Logger,
  config: RunnerConfig,
  details: { url: string; dashboardUrl?: string | undefined; metricsUrl?: string | undefined; providers: ProviderSettings; models: readonly ModelEntry[]; environment: Record<string, string | undefined> },
) => {
  logger.info('modelgate listening', {
    url: details.url,
    ...(details.dashboardUrl ? { dashboard: details.dashboardUrl } : {}),
    ...(details.metricsUrl ? { metrics: details.metricsUrl } : {}),
    ...describeStore(config),
    providers: Object.keys(details.providers),
    ...(config.dev ? { mode: 'development' } : {}),
    // Free, scripted, keyless: a first request works before any provider is set up.
    ...(isDemoOn(config) ? { demoModels: [...DEMO_MODELS] } : {}),
  })
  for (const warning of unknownVariableWarnings(details.environment)) logger.warn(warning)
  for (const warning of providerWarnings(details.providers, details.models, isDemoOn(config))) logger.warn(warning)
  if (config.dev) for (const gap of productionGaps(config)) logger.warn(`not set up for production: ${gap}`)
  else if (!config.encryptionKeys?.length) {
    logger.warn('no encryption key configured: BYOK is disabled (POST /byok answers 403) until MODELGATE_ENCRYPTION_KEYS is set')
  }
}
