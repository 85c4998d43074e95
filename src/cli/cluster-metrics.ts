/**
 * One scrape, every worker (docs/operations.md, "Metrics"): under `serve --workers` the metrics request reaches
 * whichever worker the cluster hands the connection to, so that worker asks the primary, the primary asks every
 * worker for its registry's figures, and the answer is their union. Each worker's series carry its `worker` label,
 * so nothing is summed across workers that should not be; a worker that does not answer in time is left out of that
 * scrape (its series reappear at the next), rather than holding the scrape up.
 */

import type { Worker } from 'node:cluster'
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client'
import type { MetricsExporter } from '../core/telemetry'
import type { PrometheusMetrics } from '../metrics/prometheus'
import { isMessage } from './ipc-message'

/** How long the primary waits for each worker's figures, and a worker for the primary's answer. */
export const CLUSTER_SCRAPE_TIMEOUT_MS = 2_000

type WorkerFigures = MetricObjectWithValues<MetricValue<string>>[]

/** A worker asks the primary for the whole cluster's exposition. */
interface ScrapeRequest {
  type: 'modelgate:metrics-scrape'
  id: number
}
/** The primary's answer to a worker's scrape request. */
interface ScrapeAnswer {
  type: 'modelgate:metrics-scraped'
  id: number
  text: string
}
/** The primary asks a worker for its figures. */
interface CollectRequest {
  type: 'modelgate:metrics-collect'
  id: number
}
/** A worker's figures, for the primary's collect request `id`. */
interface CollectAnswer {
  type: 'modelgate:metrics-collected'
  id: number
  figures: WorkerFigures
}

/**
 * In a worker: answers the primary's collect requests with this worker's figures, and returns the exporter the
 * gateway serves, whose exposition is the cluster's. Without an answer from the primary in time, it serves its own.
 */
export const clusterMetricsExporter = (metrics: PrometheusMetrics): MetricsExporter & { close(): void } => {
  let nextId = 0
  const waiting = new Map<number, (text: string) => void>()
  const onMessage = (message: unknown) => {
    if (isMessage<CollectRequest>(message, 'modelgate:metrics-collect')) {
      void metrics.registry
        .getMetricsAsJSON()
        .then((figures) => process.send?.({ type: 'modelgate:metrics-collected', id: message.id, figures: figures as WorkerFigures } satisfies CollectAnswer))
    } else if (isMessage<ScrapeAnswer>(message, 'modelgate:metrics-scraped')) {
      waiting.get(message.id)?.(message.text)
    }
  }
  process.on('message', onMessage)
  return {
    observer: metrics.observer,
    contentType: metrics.contentType,
    render: () =>
      new Promise<string>((resolve) => {
        const id = nextId++
        const settle = (text: string | undefined) => {
          clearTimeout(timer)
          waiting.delete(id)
          if (text !== undefined) resolve(text)
          else void metrics.render().then(resolve)
        }
        const timer = setTimeout(() => settle(undefined), CLUSTER_SCRAPE_TIMEOUT_MS)
        waiting.set(id, settle)
        process.send!({ type: 'modelgate:metrics-scrape', id } satisfies ScrapeRequest)
      }),
    close() {
      process.off('message', onMessage)
      metrics.close()
    },
  }
}

/**
 * In the primary: answers a worker's scrape request (returns false for any other message) with the union of the
 * figures of `workers()` that answer within the timeout.
 */
export const createClusterScrapes = (workers: () => Worker[]) => {
  let nextId = 0
  const collect = (worker: Worker): Promise<WorkerFigures | undefined> =>
    new Promise((resolve) => {
      const id = nextId++
      const onMessage = (message: unknown) => {
        if (isMessage<CollectAnswer>(message, 'modelgate:metrics-collected') && message.id === id) settle(message.figures)
      }
      const settle = (figures: WorkerFigures | undefined) => {
        clearTimeout(timer)
        worker.off('message', onMessage)
        worker.off('exit', onExit)
        resolve(figures)
      }
      const onExit = () => settle(undefined)
      const timer = setTimeout(() => settle(undefined), CLUSTER_SCRAPE_TIMEOUT_MS)
      worker.on('message', onMessage)
      worker.once('exit', onExit)
      try {
        worker.send({ type: 'modelgate:metrics-collect', id } satisfies CollectRequest)
      } catch {
        settle(undefined)
      }
    })

  return {
    /** Whether `message` was a scrape request of `from`, now being answered. */
    handle(from: Worker, message: unknown): boolean {
      if (!isMessage<ScrapeRequest>(message, 'modelgate:metrics-scrape')) return false
      void Promise.all(workers().map(collect)).then(async (parts) => {
        const text = await AggregatorRegistry.aggregate(parts.filter((part): part is WorkerFigures => part !== undefined)).metrics()
        if (from.isConnected()) from.send({ type: 'modelgate:metrics-scraped', id: message.id, text } satisfies ScrapeAnswer)
      })
      return true
    },
  }
}
