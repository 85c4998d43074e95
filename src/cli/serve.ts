/** `modelgate serve`: the gateway on node:http, with a clean shutdown on SIGINT and SIGTERM, and price reloads on SIGHUP. */

import type { AddressInfo } from 'node:net'
import { toNodeListener } from '../adapters/node'
import { createGateway, type Gateway } from '../gateway/gateway'
import type { Logger } from '../core/logger'
import type { StorageDriver } from '../storage/contract'
import { GATEWAY_PASS_THROUGH, providersFromEnvironment, type RunnerConfig } from './config'
import { undiciTransport } from '../transport/undici'
import type { GatewayOptions } from '../gateway/options'
import type { ModelEntry } from '../engine/models'
import { createDrainingServer } from './draining-server'
import { assertCanOpenStoredSecrets, resolveEncryptionKeys } from './encryption-keys'
import { modelsFromEnvironment } from './environment-models'
import { formatFirstManagementKey } from './first-run'
import { watchHeap } from './heap-watch'
import { shouldWatchParent, watchParent } from './parent-watch'
import { logStartup } from './startup-report'
import { isUrlSource, priceSourceOptions, watchPriceFile } from './prices'
import { explainStoreFailure } from './storage'

/**
 * Everything the runner checks and sets up in the store before it listens: stored BYOK credentials it could not
 * open refuse the start; the operator's management key is ensured, or on an empty store a first one is minted.
 * Resolves with the minted raw key, if any, to be shown once.
 */
const prepareStore = async (gateway: Gateway, config: RunnerConfig, logger: Logger): Promise<string | undefined> => {
  const audit = await gateway.admin.auditSecrets()
  assertCanOpenStoredSecrets(audit)
  if (audit.unreadable.length > 0) {
    logger.warn('some stored BYOK credentials fail their integrity check and cannot be used; store their keys again', {
      credentialIds: audit.unreadable,
    })
  }
  await gateway.admin.ensureDefaultAccount()
  if (config.managementKey) {
    // Never log the key, nor any of its characters: its hash prefix is enough to find it in GET /keys.
    const { record, created } = await gateway.admin.ensureManagementKey(config.managementKey, { name: 'MODELGATE_MANAGEMENT_KEY' })
    logger.info(created ? 'management key from MODELGATE_MANAGEMENT_KEY created' : 'management key from MODELGATE_MANAGEMENT_KEY present', {
      hashPrefix: record.hash.slice(0, 12),
      disabled: record.disabled,
    })
    return undefined
  }
  return (await gateway.admin.mintFirstManagementKey())?.key
}

/** How long, at the end of the grace period, ended streams may take to flush before connections are cut. */
const STREAM_FLUSH_MS = 1_000

/** Starts serving; resolves once the server has shut down after a signal. */
export const serve = async (config: RunnerConfig, storage: StorageDriver, logger: Logger): Promise<void> => {
  let encryptionKeys: string[]
  const providers = providersFromEnvironment(process.env, config.providers)
  // Environment models come last: the environment wins over the config file, entry by entry (by slug).
  const models = [...((config.models ?? []) as unknown as ModelEntry[]), ...modelsFromEnvironment(process.env)]
  const transport = undiciTransport()
  let gateway: Gateway
  try {
    encryptionKeys = await resolveEncryptionKeys(config, logger)
    gateway = createGateway({
      storage,
      encryptionKeys,
      transport,
      providers: providers as GatewayOptions['providers'],
      ...(models.length > 0 ? { models } : {}),
      ...(config.priceSource ? { priceSource: priceSourceOptions(config.priceSource, config.priceRefreshSeconds) } : {}),
      logger,
      basePath: config.basePath,
      ...(config.bodyLimit ? { bodyLimit: config.bodyLimit } : {}),
      ...(config.requestBodyTimeoutMs ? { requestBodyTimeoutMs: config.requestBodyTimeoutMs } : {}),
      ...(config.workspaceDefaults ? { workspaceDefaults: config.workspaceDefaults } : {}),
      ...Object.fromEntries(GATEWAY_PASS_THROUGH.filter((setting) => config[setting] !== undefined).map((setting) => [setting, config[setting]])),
      ...(config.rateLimitRequests
        ? { rateLimit: { requests: config.rateLimitRequests, windowSeconds: config.rateLimitWindowSeconds } }
        : {}),
      ...(config.ledger === 'off' ? { ledger: { enabled: false } } : {}),
      ...(config.ledgerRetentionDays ? { ledger: { retentionDays: config.ledgerRetentionDays } } : {}),
      ...(config.spendLeaseMs ? { spend: { leaseMs: config.spendLeaseMs } } : {}),
    })
  } catch (error) {
    await storage.close()
    await transport.close()
    throw error
  }

  // Releases the store (its lock) and the upstream connections when the runner gives up before serving.
  const closeAll = async () => {
    await gateway.close()
    await transport.close()
  }
  let firstManagementKey: string | undefined
  try {
    firstManagementKey = await prepareStore(gateway, config, logger)
  } catch (error) {
    await closeAll()
    throw explainStoreFailure(error, config)
  }
  // Traffic is priced by the operator's document from the first request; a document that fails to load leaves
  // the built-in prices, with a warning, as any later failed reload would.
  if (config.priceSource) await gateway.prices.ready
  const reloadPrices = () => void gateway.prices.reload()
  const stopWatchingPrices = config.priceSource && !isUrlSource(config.priceSource) ? watchPriceFile(config.priceSource, reloadPrices) : () => {}
  if (config.priceSource) process.on('SIGHUP', reloadPrices)

  const { server, drain } = createDrainingServer(toNodeListener(gateway))
  server.keepAliveTimeout = 65_000
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(config.port, config.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    // A port in use.
    await closeAll()
    throw error
  }
  const { address, port } = server.address() as AddressInfo
  const host = address.includes(':') ? `[${address}]` : address
  const apiUrl = `http://${host}:${port}${config.basePath}`
  logStartup(logger, config, { url: apiUrl, providers, models })
  // A plain line too, for people and for scripts waiting on start-up.
  process.stdout.write(`modelgate listening on http://${host}:${port}\n`)
  // On stdout, never in the log: shown once, to whoever started the gateway.
  if (firstManagementKey) process.stdout.write(formatFirstManagementKey(firstManagementKey, apiUrl))
  // The memory and file stores hold everything in the heap; SQLite's records live in its file, a networked store's in its server.
  const stopWatchingHeap = config.storage === 'memory' || config.storage === 'file' ? watchHeap(logger, { storage: config.storage }) : () => {}

  await new Promise<void>((resolve) => {
    let isStopping = false
    const stop = (signal: string) => {
      if (isStopping) return
      isStopping = true
      logger.info('shutting down', { signal })
      let cut: ReturnType<typeof setTimeout> | undefined
      const force = setTimeout(() => {
        // Streams still running end in-band (response.failed, [DONE]), which clients retry, instead of being cut
        // mid-answer; their last events get a moment to reach the sockets before every connection is closed.
        gateway.endStreams()
        cut = setTimeout(() => server.closeAllConnections(), STREAM_FLUSH_MS)
        cut.unref()
      }, config.shutdownGraceSeconds * 1000)
      force.unref()
      server.close(() => {
        clearTimeout(force)
        clearTimeout(cut)
        resolve()
      })
      // Keep-alive connections close as their last response ends, not at the end of the grace period.
      drain()
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
    if (shouldWatchParent(config.watchParent, process.env)) {
      watchParent(() => stop('parent process exited'))
      logger.info('the gateway stops when its parent process exits', { parentPid: process.ppid })
    }
  })
  stopWatchingPrices()
  stopWatchingHeap()
  process.off('SIGHUP', reloadPrices)
  await gateway.close()
  await transport.close()
  logger.info('stopped')
}
