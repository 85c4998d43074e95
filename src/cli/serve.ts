/** `modelgate serve`: the gateway on node:http, with a clean shutdown on SIGINT and SIGTERM, and price reloads on SIGHUP. */

import type { AddressInfo } from 'node:net'
import { createEventLoopMonitor, toNodeListener } from '../adapters/node'
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
import { isDemoOn, logStartup } from './startup-report'
import { isUrlSource, priceSourceOptions, watchPriceFile } from './prices'
import { explainStoreFailure } from './storage'
import { runnerLog } from './stderr-lines'
import { DEFAULT_DASHBOARD_PATH } from '../dashboard/page'
import { createPrometheusMetrics } from '../metrics/prometheus'
import { clusterMetricsExporter } from './cluster-metrics'
import { listenMetrics, metricsOptions, metricsPathOf, type MetricsServer } from './metrics'
import { isTraceExportConfigured, startTraceExport, type TraceExport } from './tracing'

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
export const STREAM_FLUSH_MS = 1_000

/** A worker process of `modelgate serve --workers` (src/cli/cluster.ts). */
export interface ClusterWorker {
  /** Its cluster id: `/health` reports it as `worker`, and its log lines carry it. */
  id: number
  /** The first worker starts alone: it checks and prepares the store and writes the start-up report; the others do neither. */
  isFirst: boolean
  /** Tells the primary this worker listens, which prints the listening line and a first management key once for all. */
  announce(ready: { origin: string; apiUrl: string; firstManagementKey?: string }): void
}

/** Starts serving; resolves once the server has shut down after a signal. */
export const serve = async (config: RunnerConfig, storage: StorageDriver, logger: Logger, worker?: ClusterWorker): Promise<void> => {
  let encryptionKeys: string[]
  const providers = providersFromEnvironment(process.env, config.providers)
  // Environment models come last: the environment wins over the config file, entry by entry (by slug).
  const models = [...((config.models ?? []) as unknown as ModelEntry[]), ...modelsFromEnvironment(process.env)]
  const transport = undiciTransport()
  // Every tenant shares this process's event loop: its delay goes to /health/ready, and a stall to the log.
  let traces: TraceExport | undefined
  const eventLoop = createEventLoopMonitor({ logger })
  const ownMetrics = config.metrics === 'off' ? undefined : createPrometheusMetrics(worker ? { defaultLabels: { worker: String(worker.id) } } : {})
  // A worker's scrape answers for every worker (src/cli/cluster-metrics.ts): the connection reached just one of them.
  const metrics = ownMetrics && worker ? clusterMetricsExporter(ownMetrics) : ownMetrics
  let gateway: Gateway
  try {
    // A protocol the runner does not ship, or another exporter named, refuses the start.
    if (isTraceExportConfigured(process.env)) traces = await startTraceExport(process.env)
    encryptionKeys = await resolveEncryptionKeys(config, logger)
    gateway = createGateway({
      storage,
      encryptionKeys,
      transport,
      eventLoop,
      providers: providers as GatewayOptions['providers'],
      ...(models.length > 0 ? { models } : {}),
      ...(config.priceSource ? { priceSource: priceSourceOptions(config.priceSource, config.priceRefreshSeconds) } : {}),
      logger,
      basePath: config.basePath,
      ...(config.bodyLimit ? { bodyLimit: config.bodyLimit } : {}),
      ...(config.inferenceBodyLimit ? { inferenceBodyLimit: config.inferenceBodyLimit } : {}),
      ...(config.requestBodyTimeoutMs ? { requestBodyTimeoutMs: config.requestBodyTimeoutMs } : {}),
      ...(config.workspaceDefaults ? { workspaceDefaults: config.workspaceDefaults } : {}),
      ...Object.fromEntries(GATEWAY_PASS_THROUGH.filter((setting) => config[setting] !== undefined).map((setting) => [setting, config[setting]])),
      ...(config.rateLimitRequests
        ? { rateLimit: { requests: config.rateLimitRequests, windowSeconds: config.rateLimitWindowSeconds } }
        : {}),
      ...(config.ledger === 'off' ? { ledger: { enabled: false } } : {}),
      ...(config.ledgerRetentionDays ? { ledger: { retentionDays: config.ledgerRetentionDays } } : {}),
      ...(config.auditLogRetentionDays ? { auditLog: { retentionDays: config.auditLogRetentionDays } } : {}),
      ...(config.storedResponses === 'on'
        ? { storedResponses: config.storedResponseRetentionDays ? { retentionDays: config.storedResponseRetentionDays } : {} }
        : {}),
      ...(config.spendLeaseMs ? { spend: { leaseMs: config.spendLeaseMs } } : {}),
      ...(config.readCache === 'off' ? { readCache: false } : {}),
      ...(config.routingBalancing ? { routing: { balancing: config.routingBalancing } } : {}),
      ...(config.dashboard ? { dashboard: config.dashboardPath ? { path: config.dashboardPath } : true } : {}),
      ...(worker ? { worker: worker.id } : {}),
      ...(isDemoOn(config) ? { demoModels: true } : {}),
      ...(metrics ? { metrics: metricsOptions(metrics, config) } : {}),
      ...(traces ? { tracing: true } : {}),
    })
  } catch (error) {
    metrics?.close()
    await traces?.shutdown()
    eventLoop.stop()
    await storage.close()
    await transport.close()
    throw error
  }

  // Releases the store (its lock) and the upstream connections when the runner gives up before serving.
  const closeAll = async () => {
    eventLoop.stop()
    await gateway.close()
    await transport.close()
    await traces?.shutdown()
  }
  let firstManagementKey: string | undefined
  try {
    if (!worker || worker.isFirst) firstManagementKey = await prepareStore(gateway, config, logger)
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
  let metricsServer: MetricsServer | undefined
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(config.port, config.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    if (metrics && config.metricsPort !== undefined) metricsServer = await listenMetrics(gateway, config)
  } catch (error) {
    // A port in use.
    server.close()
    await closeAll()
    throw error
  }
  const { address, port } = server.address() as AddressInfo
  const host = address.includes(':') ? `[${address}]` : address
  const origin = `http://${host}:${port}`
  const apiUrl = `${origin}${config.basePath}`
  const dashboardUrl = config.dashboard ? `${origin}${config.dashboardPath ?? DEFAULT_DASHBOARD_PATH}` : undefined
  const metricsUrl = metricsServer ? `http://${host}:${metricsServer.port}${metricsServer.path}` : metrics ? `${origin}${metricsPathOf(config)}` : undefined
  if (!worker || worker.isFirst) logStartup(logger, config, { url: apiUrl, dashboardUrl, metricsUrl, providers, models, environment: process.env })
  if (worker) worker.announce({ origin, apiUrl, ...(firstManagementKey ? { firstManagementKey } : {}) })
  else {
    // A plain line too, for people and for scripts waiting on start-up.
    runnerLog().flush()
    process.stdout.write(`modelgate listening on ${origin}\n`)
    // On stdout, never in the log: shown once, to whoever started the gateway.
    if (firstManagementKey) process.stdout.write(formatFirstManagementKey(firstManagementKey, apiUrl))
  }
  // The memory and file stores hold everything in the heap; SQLite's records live in its file, a networked store's in its server.
  const stopWatchingHeap = config.storage === 'memory' || config.storage === 'file' ? watchHeap(logger, { storage: config.storage }) : () => {}

  const onSigint = () => stop('SIGINT')
  const onSigterm = () => stop('SIGTERM')
  let stop: (signal: string) => void = () => {}
  await new Promise<void>((resolve) => {
    let isStopping = false
    stop = (signal: string) => {
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
    // Alone, a second signal ends the process at once. A worker hears a terminal's Ctrl-C twice, from the terminal
    // and from the primary, and keeps draining: the primary bounds its shutdown.
    const listen = worker ? 'on' : 'once'
    process[listen]('SIGINT', onSigint)
    process[listen]('SIGTERM', onSigterm)
    // A worker's parent is the primary, which watches its own parent for all of them.
    if (!worker && shouldWatchParent(config.watchParent, process.env)) {
      watchParent(() => stop('parent process exited'))
      logger.info('the gateway stops when its parent process exits', { parentPid: process.ppid })
    }
  })
  stopWatchingPrices()
  stopWatchingHeap()
  await metricsServer?.close()
  eventLoop.stop()
  process.off('SIGHUP', reloadPrices)
  await gateway.close()
  await transport.close()
  // The spans of the last requests are sent before the process ends.
  await traces?.shutdown()
  logger.info('stopped')
  // A worker keeps ignoring the signal's repeat until it exits: one arriving late must not kill it.
  if (!worker) {
    process.off('SIGINT', onSigint)
    process.off('SIGTERM', onSigterm)
  }
}
