#!/usr/bin/env node
/**
 * The standalone runner and operator CLI:
 *   modelgate serve                 start the gateway on Node
 *   modelgate keys create           mint an API key (prints the raw key once)
 *   modelgate accounts create       create an account with its default workspace
 *   modelgate accounts flags        set account flags such as --interns
 */

import { parseArgs } from 'node:util'
import { createGateway, type Gateway } from '../core/gateway'
import { createConsoleLogger } from '../core/logger'
import { isGatewayError } from '../core/errors'
import type { StorageDriver } from '../storage/contract'
import { configFromEnvironment, flagsToConfig, readConfigFile, resolveConfig, type RunnerConfig } from './config'
import { serve } from './serve'
import { resolveEncryptionKeys } from './encryption-keys'
import { generateMasterKey } from '../core/secrets'
import { openStorage } from './storage'

const USAGE = `Usage: modelgate <command> [options]

Commands:
  serve                       Start the gateway (default store: ./.modelgate on disk)
  keys create                 Create an API key and print it once
      --management            a management key (default: a regular key)
      --name <name>           key name
      --account <id|slug>     account (default: the default account)
      --workspace <id|slug>   workspace (default: the account's default workspace)
  accounts create --slug <slug> [--name <name>] [--interns]
  accounts flags [--account <id|slug>] --interns | --no-interns
  byok reencrypt              Re-seal BYOK keys with the first of MODELGATE_ENCRYPTION_KEYS
  secrets generate-key        Print a new random encryption key (base64)

Common options:
  --config <file>             JSON config file (also MODELGATE_CONFIG)
  --data-dir <dir>            embedded store directory (also MODELGATE_DATA_DIR; default .modelgate)
  --memory                    keep state in memory only (lost on exit)
  --dev                       development mode: generate and keep an encryption key in the data dir
  --port <n> --host <h> --base-path <p> --log-level <debug|info|warn|error>   (serve)
`

const OPTIONS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  memory: { type: 'boolean' },
  port: { type: 'string' },
  host: { type: 'string' },
  'base-path': { type: 'string' },
  'log-level': { type: 'string' },
  management: { type: 'boolean' },
  name: { type: 'string' },
  account: { type: 'string' },
  workspace: { type: 'string' },
  slug: { type: 'string' },
  interns: { type: 'boolean' },
  'no-interns': { type: 'boolean' },
  dev: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

const loadConfig = async (flags: Record<string, string | boolean | undefined>): Promise<RunnerConfig> => {
  const configPath = (flags.config as string | undefined) ?? process.env.MODELGATE_CONFIG
  const fromFile = configPath ? await readConfigFile(configPath) : {}
  return resolveConfig(fromFile, configFromEnvironment(process.env), flagsToConfig(flags))
}

const withGateway = async <T>(config: RunnerConfig, action: (gateway: Gateway) => Promise<T>): Promise<T> => {
  let storage: StorageDriver
  try {
    storage = await openStorage(config)
  } catch (error) {
    if (!/in use by process/.test((error as Error).message)) throw error
    // The embedded store belongs to one process at a time; a running gateway holds it.
    throw new Error(
      `${(error as Error).message}. Stop that gateway first, or use its HTTP API with a management key (POST ${config.basePath}/keys).`,
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

const run = async (argv: string[]): Promise<number> => {
  const { values: flags, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true })
  const [command, subcommand] = positionals
  if (flags.help || !command) {
    process.stdout.write(USAGE)
    return flags.help ? 0 : 1
  }
  const config = await loadConfig(flags)

  if (command === 'serve') {
    const logger = createConsoleLogger(config.logLevel)
    await serve(config, await openStorage(config), logger)
    return 0
  }

  if (command === 'keys' && subcommand === 'create') {
    const { key, record } = await withGateway(config, (gateway) =>
      gateway.admin.createKey({
        kind: flags.management ? 'management' : 'regular',
        ...(flags.name ? { name: flags.name } : {}),
        ...(flags.account ? { accountId: flags.account } : {}),
        ...(flags.workspace ? { workspaceId: flags.workspace } : {}),
      }),
    )
    // The raw key goes to stdout alone so scripts can capture it; the details go to stderr.
    process.stderr.write(`Created ${record.kind} key "${record.name}" (${record.label}, hash ${record.hash}). It is shown only once:\n`)
    process.stdout.write(`${key}\n`)
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

  if (command === 'byok' && subcommand === 'reencrypt') {
    if (!config.encryptionKeys?.length && !config.dev) throw new Error('modelgate: byok reencrypt needs MODELGATE_ENCRYPTION_KEYS (new key first, then the old ones)')
    const result = await withGateway(config, (gateway) => gateway.admin.reencryptSecrets())
    process.stdout.write(`${JSON.stringify(result)}\n`)
    return 0
  }

  if (command === 'secrets' && subcommand === 'generate-key') {
    process.stdout.write(`${generateMasterKey()}\n`)
    return 0
  }

  process.stderr.write(`modelgate: unknown command "${positionals.join(' ')}"\n\n${USAGE}`)
  return 1
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code
  },
  (error: unknown) => {
    const message = isGatewayError(error) || error instanceof Error ? error.message : String(error)
    process.stderr.write(`${message.startsWith('modelgate') ? '' : 'modelgate: '}${message}\n`)
    process.exitCode = 1
  },
)
