/**
 * The runner's metrics (docs/operations.md, "Metrics"): served by the gateway at `metricsPath` on the API's port, to
 * management keys unless `metrics` is `public`; or, with `metricsPort`, on a port of their own that asks for no key
 * (the operator keeps it private, as a Prometheus target usually is) and answers nothing else.
 */

import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toNodeListener } from '../adapters/node'
import type { Gateway } from '../gateway/gateway'
import { DEFAULT_METRICS_PATH } from '../gateway/metrics'
import type { GatewayOptions } from '../gateway/options'
import type { MetricsExporter } from '../core/telemetry'
import type { RunnerConfig } from './config'

/** The gateway's `metrics` option for the runner's settings. */
export const metricsOptions = (exporter: MetricsExporter, config: RunnerConfig): NonNullable<GatewayOptions['metrics']> =>
  config.metricsPort === undefined
    ? { exporter, path: metricsPathOf(config), isPublic: config.metrics === 'public' }
    : { exporter, path: false, isPublic: true }

export const metricsPathOf = (config: RunnerConfig) => config.metricsPath ?? DEFAULT_METRICS_PATH

export interface MetricsServer {
  port: number
  path: string
  close(): Promise<void>
}

/** Listens on `metricsPort` of `host`, answering the metrics at their path and 404 anywhere else. */
export const listenMetrics = (gateway: Gateway, config: RunnerConfig): Promise<MetricsServer> => {
  const path = metricsPathOf(config)
  const server = createServer(
    toNodeListener({
      fetch: (request) =>
        new URL(request.url).pathname === path ? gateway.metrics(request) : Promise.resolve(new Response(`Not found: the metrics are at ${path}\n`, { status: 404 })),
    }),
  )
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(config.metricsPort, config.host, () => {
      server.off('error', reject)
      resolve({
        port: (server.address() as AddressInfo).port,
        path,
        close: () => new Promise<void>((closed) => server.close(() => closed())),
      })
    })
  })
}
