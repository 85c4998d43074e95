#!/usr/bin/env node
/**
 * The standalone runner and operator CLI (`modelgate --help` lists every command):
 *   modelgate serve                 start the gateway on Node
 *   modelgate keys create|list|revoke
 *   modelgate accounts create|flags
 *   modelgate credits grant|show
 *   modelgate byok reencrypt, secrets generate-key
 *   modelgate backup <file>         a copy of the SQLite store, while gateways use it
 */

import cluster from 'node:cluster'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { version } from '../../package.json'
import { createGateway, type Gateway } from '../gateway/gateway'
import { createConsoleLogger } from '../core/logger'
import { isGatewayError } from '../core/errors'
import type { StorageDriver } from '../storage/contract'
import { flagsToConfig, readConfigFile, resolveConfig, type RunnerConfig } from './config'
import { configFromEnvironment } from './variables'
import { serve } from './serve'
import { runnerLog } from './stderr-lines'
import { announceReady, askPrimary, assertStoreShared, resolveWorkerCount, runCluster, withWorkerField } from './cluster'
import { resolveEncryptionKeys } from './encryption-keys'
import { generateMasterKey } from '../core/secrets'
import { createKeyCommand, listKeysCommand, revokeKeyCommand } from './keys'
import { grantCreditsCommand, showCreditsCommand } from './credits'
import { describeStorage, openStorage, sqlitePathOf } from './storage'
import { usage } from './usage'

const OPTIONS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  memory: { type: 'boolean' },
  port: { type: 'string' },
  host: { type: 'string' },
  'base-path': { type: 'string' },
  'log-level': { type: 'string' },
  workers: { type: 'string' },
  management: { type: 'boolean' },
  name: { type: 'string' },
  account: { type: 'string' },
  workspace: { type: 'string' },
  user: { type: 'string' },
  slug: { type: 'string' },
  note: { type: 'string' },
  interns: { type: 'boolean' },
  'no-interns': { type: 'boolean' },
  all: { type: 'boolean' },
  dev: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const

const output = {
  stdout: (text: string) => void process.stdout.write(text),
  stderr: (text: string) => void process.stderr.write(text),
}

const loadConfig = async (flags: Record<string, string | boolean | undefined>): Promise<RunnerConfig> => {
  const configPath = (flags.config as string | undefined) ?? process.env.MODELGATE_CONFIG
  const fromFile = configPath ? await readConfigFile(configPath) : {}
  return resolveConfig(fromFile, configFromEnvironment(process.env), flagsToConfig(flags))
}

const withGateway = async <T>(config: RunnerConfig, action: (gateway: Gateway) => Promise<T>): Promise<T> => {
  let storage: StorageDriver
  try {
    storage = await openStorage(config, createConsoleLogger(config.logLevel))
  } catch (error) {
    const holder = /in use by process (\d+)/.exec((error as Error).message)?.[1]
    if (!holder) throw error
    // The embedded file store belongs to one process at a time; a running gateway holds it.
    throw new Error(
      `${(error as Error).message}. Stop that gateway first (Ctrl-C in its terminal, or kill ${holder}), then run this command again.`,
    )
  }
  const gateway = createGateway({
    storage,
    logger: false,
    basePath: config.basePath,
    // A one-shot command must not take over provisioning runs: it would hold its exit until they finish.
    internProvisioning: { sweepIntervalMs: false },
    encryptionKeys: await resolveEncryptionKeys(config, createConsoleLogger('error')),
  })
  try {
    return await action(gateway)
  } finally {
    await gateway.close()
  }
}

/**
 * A worker of `serve --workers`: it serves with the configuration the primary resolved once (a config file edited
 * since does not reach one worker alone), and lets go of the primary's channel when it stops, so the process exits.
 */
const serveAsWorker = async () => {
  const id = cluster.worker!.id
  try {
    const { config, isFirst } = await askPrimary()
    const logger = withWorkerField(createConsoleLogger(config.logLevel, runnerLog().writeLine), id)
    await serve(config, await openStorage(config, logger), logger, { id, isFirst, announce: announceReady })
  } finally {
    cluster.worker!.disconnect()
  }
}

const run = async (argv: string[]): Promise<number> => {
  const { values: flags, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true })
  const [command, subcommand, argument] = positionals
  if (flags.version) {
    process.stdout.write(`${version}\n`)
    return 0
  }
  if (flags.help || !command) {
    process.stdout.write(usage())
    return flags.help ? 0 : 1
  }
  if (command === 'serve' && cluster.isWorker) {
    await serveAsWorker()
    return 0
  }
  const config = await loadConfig(flags)

  if (command === 'serve') {
    const logger = createConsoleLogger(config.logLevel, runnerLog().writeLine)
    const workers = resolveWorkerCount(config.workers)
    if (workers > 1) {
      assertStoreShared(config, workers)
      return runCluster(config, workers, logger)
    }
    await serve(config, await openStorage(config, logger), logger)
    return 0
  }

  if (command === 'keys' && subcommand === 'create') {
    await withGateway(config, (gateway) => createKeyCommand(gateway, flags, output))
    return 0
  }

  if (command === 'keys' && subcommand === 'list') {
    await withGateway(config, (gateway) => listKeysCommand(gateway, flags, output))
    return 0
  }

  if (command === 'keys' && subcommand === 'revoke') {
    await withGateway(config, (gateway) => revokeKeyCommand(gateway, argument, flags, output))
    return 0
  }

  if (command === 'accounts' && subcommand === 'create') {
    if (!flags.slug) throw new Error('modelgate: accounts create needs --slug')
    const { account, workspace } = await withGateway(config, (gateway) =>
      gateway.admin.createAccount({ slug: flags.slug!, name: flags.name ?? flags.slug!, flags: { interns: flags.interns === true } }),
    )
    process.stdout.write(`${JSON.stringify({ id: account.id, slug: account.slug, default_workspace_id: workspace.id, flags: account.flags })}\n`)
    return 0
  }

  if (command === 'accounts' && subcommand === 'flags') {
    if (!flags.interns && !flags['no-interns']) throw new Error('modelgate: accounts flags needs --interns or --no-interns')
    const account = await withGateway(config, (gateway) =>
      gateway.admin.setAccountFlags(flags.account, { interns: flags.interns === true }),
    )
    process.stdout.write(`${JSON.stringify({ id: account.id, slug: account.slug, flags: account.flags })}\n`)
    return 0
  }

  if (command === 'credits' && subcommand === 'grant') {
    await withGateway(config, (gateway) => grantCreditsCommand(gateway, argument, flags, output))
    return 0
  }

  if (command === 'credits' && subcommand === 'show') {
    await withGateway(config, (gateway) => showCreditsCommand(gateway, flags, output))
    return 0
  }

  if (command === 'byok' && subcommand === 'reencrypt') {
    if (!config.encryptionKeys?.length && !config.dev) throw new Error('modelgate: byok reencrypt needs MODELGATE_ENCRYPTION_KEYS (new key first, then the old ones)')
    const result = await withGateway(config, (gateway) => gateway.admin.reencryptSecrets())
    process.stdout.write(`${JSON.stringify(result)}\n`)
    return 0
  }

  if (command === 'backup') {
    const path = sqlitePathOf(config)
    if (path === undefined) throw new Error(`modelgate: backup copies the SQLite store; back up the ${config.storage === 'file' || config.storage === 'memory' ? config.storage : describeStorage(config.storage)} store with its own tools`)
    if (!subcommand) throw new Error('modelgate: backup needs the file to write: modelgate backup <file>')
    const { backupSqliteStorage } = await import('../storage/sqlite')
    try {
      await backupSqliteStorage({ path, to: subcommand })
    } catch (error) {
      throw new Error(`modelgate: cannot back up the store at ${path} to ${subcommand}: ${(error as Error).message}`, { cause: error })
    }
    process.stderr.write(`Copied the store at ${path} to ${resolve(subcommand)}\n`)
    return 0
  }

  if (command === 'secrets' && subcommand === 'generate-key') {
    process.stdout.write(`${generateMasterKey()}\n`)
    return 0
  }

  process.stderr.write(`modelgate: unknown command "${positionals.join(' ')}"\n\n${usage()}`)
  return 1
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code
  },
  (error: unknown) => {
    const message = isGatewayError(error) || error instanceof Error ? error.message : String(error)
    runnerLog().flush()
    process.stderr.write(`${message.startsWith('modelgate') ? '' : 'modelgate: '}${message}\n`)
    process.exitCode = 1
  },
)
