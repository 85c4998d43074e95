/**
 * What each gateway process measured of the endpoints it sent traffic to (docs/decisions.md, "Routing by measured
 * speed"): one record per process, rewritten at each periodic merge, read by the other processes so that every one
 * routes on the traffic of all. A record no longer rewritten (a process that stopped) decays to nothing in the
 * readers' merge and is deleted by the next process that finds it stale.
 */

import { StorageConflictError } from '../core/errors'
import type { StorageDriver } from '../storage/contract'

export const ENDPOINT_PERFORMANCE = 'endpoint_performance'

/** One endpoint's decayed sketches as a process holds them (src/engine/decayed-sketch.ts). */
export type EndpointPerformanceEntry = {
  /** When the weights were last decayed, in ms since the epoch. */
  at: number
  latency: number[]
  /** Null until an answer of the endpoint reported output tokens. */
  throughput: number[] | null
}

export type EndpointPerformanceRecord = {
  /** The process's own random id. */
  instance: string
  /** When the process wrote this record, in ms since the epoch. */
  writtenAt: number
  /** By endpoint key (`<kind> <provider> <upstream model>`). */
  endpoints: Record<string, EndpointPerformanceEntry>
}

export const createEndpointPerformanceRepository = (storage: StorageDriver) => ({
  /** Writes the process's record, creating it when absent. Only its own process writes it, so a conflict is a deletion meanwhile. */
  async publish(record: EndpointPerformanceRecord): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await storage.get<EndpointPerformanceRecord>(ENDPOINT_PERFORMANCE, record.instance)
      try {
        if (current) {
          const input = { id: record.instance, data: record, isDataHandedOver: true }
          if ((await storage.update(ENDPOINT_PERFORMANCE, record.instance, current.version, input)) !== null) return
        } else {
          await storage.create(ENDPOINT_PERFORMANCE, { id: record.instance, data: record, isDataHandedOver: true })
          return
        }
      } catch (error) {
        if (!(error instanceof StorageConflictError)) throw error
      }
    }
  },

  /** Every process's record. */
  async list(): Promise<EndpointPerformanceRecord[]> {
    const { items } = await storage.list<EndpointPerformanceRecord>(ENDPOINT_PERFORMANCE)
    return items.map((item) => item.data)
  },

  /** Deletes a stale record; resolves whether it went. */
  async remove(instance: string): Promise<boolean> {
    return storage.delete(ENDPOINT_PERFORMANCE, instance)
  },
})

export type EndpointPerformanceRepository = ReturnType<typeof createEndpointPerformanceRepository>
