/** `modelgate serve`: the gateway on node:http, with a clean shutdown on SIGINT and SIGTERM. */

import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toNodeListener } from '../adapters/node'
import { createGateway } from '../core/gateway'
import type { Logger } from '../core/logger'
import type { StorageDriver } from '../storage/contract'
import { providersFromEnvironment, type RunnerConfig } from './config'
import { undiciTransport } from '../transport/undici'
import type { GatewayOptions } from '../core/options'
import type { ModelEntry } from '../responses/models'
import { assertCanOpenStoredSecrets, resolveEncryptionKeys } from './encryption-keys'

/** How long, at the end of the grace period, ended streams may take to flush before connections are cut. */
const STREAM_FLUSH_MS = 1_000

/** Starts serving; resolves once the server has shut down after a signal. */
export const serve = async (config: RunnerConfig, storage: StorageDriver, logger: Logger): Promise<void> => {
  let encryptionKeys: string[]
  try {
    encryptionKeys = await resolveEncryptionKeys(config, logger)
  } catch (error) {
    await storage.close()
    throw error
  }
  const transport = undiciTransport()
  const gateway = createGateway({
    storage,
    encryptionKeys,
    transport,
    providers: providersFromEnvironment(process.env, config.providers) as GatewayOptions['providers'],
    ...(config.models ? { models: config.models as unknown as ModelEntry[] } : {}),
    logger,
    basePath: config.basePath,
    ...(config.bodyLimit ? { bodyLimit: config.bodyLimit } : {}),
    ...(config.workspaceDefaults ? { workspaceDefaults: config.workspaceDefaults } : {}),
    ...(config.upstream ? { upstream: config.upstream } : {}),
    ...(config.upstreamGuard ? { upstreamGuard: config.upstreamGuard } : {}),
    ...(config.rateLimitRequests
      ? { rateLimit: { requests: config.rateLimitRequests, windowSeconds: config.rateLimitWindowSeconds } }
      : {}),
  })

  try {
    assertCanOpenStoredSecrets(await gateway.admin.countByokCredentials(), encryptionKeys)
    if (encryptionKeys.length === 0) logger.warn('no encryption key configured: BYOK credentials cannot be stored (set MODELGATE_ENCRYPTION_KEYS)')
    await gateway.admin.ensureDefaultAccount()
    if (config.managementKey) {
      // Never log the key itself; its label is safe to show.
      const { record, created } = await gateway.admin.ensureManagementKey(config.managementKey, { name: 'MODELGATE_MANAGEMENT_KEY' })
      logger.info(created ? 'management key from MODELGATE_MANAGEMENT_KEY created' : 'management key from MODELGATE_MANAGEMENT_KEY present', {
        label: record.label,
        disabled: record.disabled,
      })
    }
  } catch (error) {
    await gateway.close()
    throw error
  }

  const server = createServer(toNodeListener(gateway))
  server.keepAliveTimeout = 65_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(config.port, config.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { address, port } = server.address() as AddressInfo
  const host = address.includes(':') ? `[${address}]` : address
  logger.info('modelgate listening', { url: `http://${host}:${port}${config.basePath}`, storage: gateway.storage.name })
  // A plain line too, for people and for scripts waiting on start-up.
  process.stdout.write(`modelgate listening on http://${host}:${port}\n`)

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
      server.closeIdleConnections()
    }
    process.once('SIGINT', () => stop('SIGINT'))
    process.once('SIGTERM', () => stop('SIGTERM'))
  })
  await gateway.close()
  await transport.close()
  logger.info('stopped')
}
