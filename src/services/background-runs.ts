/**
 * Background responses, the store's side (docs/decisions.md, Background runs): a run's record and its events under
 * the asking workspace, kept readable or sealed as its stored responses are (sealed-content.ts), the lease of the
 * process running it (src/core/lease.ts), and the runs this process has in hand, so a cancel here stops one at once
 * and a stream here follows one as it is written.
 */

import { randomId } from '../core/crypto'
import type { Logger } from '../core/logger'
import { startPeriodicTask, sweepOlderThan } from '../core/periodic'
import { isLeaseLive, newLease, type LeaseSettings } from '../core/lease'
import type { SecretBox } from '../core/secrets'
import type { BackgroundRunContent, BackgroundRunRecord, BackgroundRunsRepository, BackgroundStatus } from '../repositories/background-runs'
import type { WorkspaceRecord } from '../repositories/workspaces'
import type { JsonObject } from '../storage/contract'
import { keepContent, openContent } from './sealed-content'
import type { ResponseOwner } from './stored-responses'

export const DEFAULT_BACKGROUND_FLUSH_INTERVAL_MS = 250

export interface BackgroundRunsSettings extends LeaseSettings {
  /** How often a run's new events are written to the store (and at its end). */
  flushIntervalMs: number
}

export const TERMINAL: ReadonlySet<BackgroundStatus> = new Set(['completed', 'failed', 'incomplete', 'cancelled'])

/** A run this process is running: its stop, and its events so far for the streams that follow it here. */
export interface LocalRun {
  runId: string
  controller: AbortController
  events: JsonObject[]
  isEnded: boolean
  /** Resolves at the next event or at the end. */
  changed(): Promise<void>
  notify(): void
}

const runData = (id: string, owner: Pick<ResponseOwner, 'accountId' | 'workspaceId'>) => `background-run:${owner.accountId}:${owner.workspaceId}:${id}`
const eventsData = (id: string, index: number, owner: Pick<ResponseOwner, 'accountId' | 'workspaceId'>) => `background-events:${owner.accountId}:${owner.workspaceId}:${id}:${index}`

const newLocalRun = (runId: string): LocalRun => {
  let wake: (() => void) | undefined
  let next = new Promise<void>((resolve) => (wake = resolve))
  return {
    runId,
    controller: new AbortController(),
    events: [],
    isEnded: false,
    changed: () => next,
    notify() {
      const resolve = wake
      next = new Promise<void>((done) => (wake = done))
      resolve?.()
    },
  }
}

/** Background records go with their stored responses: the same retention, swept as often. */
export interface BackgroundRetention {
  retentionDays: number
  sweepIntervalMs: number | false
  logger: Logger
}

const DAY_MS = 86_400_000

export const createBackgroundRuns = (repository: BackgroundRunsRepository, secrets: SecretBox, settings: BackgroundRunsSettings, now: () => Date, retention: BackgroundRetention) => {
  const local = new Map<string, LocalRun>()
  const { logger } = retention
  const cutoff = () => new Date(now().getTime() - retention.retentionDays * DAY_MS).toISOString()
  const sweepExpired = () => sweepOlderThan(repository.deleteOlderThan.bind(repository), cutoff(), logger, 'background runs')
  const sweeping = startPeriodicTask(retention.sweepIntervalMs, sweepExpired, (error) => logger.warn('background runs retention sweep failed; retrying at the next', { error }))
  const isReadable = (record: BackgroundRunRecord) => 'plain' in record.content

  return {
    settings,
    local,
    /** The runs of this process, as promises: gateway close waits for them. */
    tasks: new Set<Promise<unknown>>(),

    /** A new queued run of response `id`, held by this process. */
    async queue(id: string, owner: ResponseOwner & { keyHash: string }, workspace: Pick<WorkspaceRecord, 'isObservabilityIoLoggingEnabled'>, content: BackgroundRunContent) {
      return repository.create({
        id,
        ...owner,
        createdAt: now().toISOString(),
        status: 'queued',
        runId: randomId(),
        lease: newLease(settings, now()),
        isCancelRequested: false,
        generationId: null,
        eventCount: 0,
        chunkCount: 0,
        content: await keepContent(secrets, workspace, content, runData(id, owner)),
      })
    },

    /** The record of `id` if `owner` may see it and its retention has not run out. */
    async find(id: string, owner: ResponseOwner): Promise<BackgroundRunRecord | null> {
      const record = await repository.get(id)
      if (!record || record.accountId !== owner.accountId || record.workspaceId !== owner.workspaceId) return null
      // Past its retention it reads as absent at once, as a stored response does, whenever the sweep deletes it.
      return record.createdAt < cutoff() ? null : record
    },

    get: (id: string) => repository.get(id),
    content: (record: BackgroundRunRecord) => openContent(secrets, record.content, runData(record.id, record)),

    /** Applies `change` to the run while `runId` is still its wanted, unfinished run; resolves `null` once it is not. */
    async ifCurrent(id: string, runId: string, change: (current: BackgroundRunRecord) => BackgroundRunRecord): Promise<BackgroundRunRecord | null> {
      return repository.update(id, (current) => (current.runId === runId && !TERMINAL.has(current.status) ? change(current) : null))
    },

    /** Ends the run as `status` with its final Response object, unless it ended otherwise first (a cancel). */
    async finish(record: BackgroundRunRecord, runId: string, status: BackgroundStatus, response: JsonObject) {
      const current = await this.content(record)
      const content = await keepContent(secrets, { isObservabilityIoLoggingEnabled: isReadable(record) }, { ...current, response }, runData(record.id, record))
      return this.ifCurrent(record.id, runId, (latest) => ({ ...latest, status, lease: null, content }))
    },

    /** Takes over a run whose lease expired: a new run id and lease for this process, or `null` when it is alive or over. */
    async claimAbandoned(id: string): Promise<BackgroundRunRecord | null> {
      return repository.update(id, (current) => {
        if (TERMINAL.has(current.status) || isLeaseLive(current.lease, now())) return null
        return { ...current, status: 'queued', runId: randomId(), lease: newLease(settings, now()), isCancelRequested: false, generationId: null, eventCount: 0 }
      })
    },

    /** Marks the run cancelled (a flag its process reads at its next heartbeat); `null` when it was not cancellable. */
    async cancel(id: string, response: (content: BackgroundRunContent) => JsonObject): Promise<BackgroundRunRecord | null> {
      const record = await repository.get(id)
      if (!record || TERMINAL.has(record.status)) return null
      const current = await this.content(record)
      const content = await keepContent(secrets, { isObservabilityIoLoggingEnabled: isReadable(record) }, { ...current, response: response(current) }, runData(id, record))
      return repository.update(id, (latest) => (TERMINAL.has(latest.status) ? null : { ...latest, status: 'cancelled', isCancelRequested: true, lease: null, content }))
    },

    /** Writes the next chunk of a run's events and counts it on the record; `false` once the run is no longer `runId`'s. */
    async appendEvents(record: BackgroundRunRecord, runId: string, events: JsonObject[], firstSequence: number): Promise<boolean> {
      const latest = await repository.get(record.id)
      if (!latest || latest.runId !== runId) return false
      const index = latest.chunkCount
      await repository.appendChunk({
        id: `${record.id}.${index.toString().padStart(8, '0')}`,
        responseId: record.id,
        runId,
        index,
        firstSequence,
        events: await keepContent(secrets, { isObservabilityIoLoggingEnabled: isReadable(record) }, events, eventsData(record.id, index, record)),
      })
      // Counted even when the run ended meanwhile (a cancel): its events are still to be replayed.
      const counted = await repository.update(record.id, (current) => (current.runId === runId ? { ...current, chunkCount: index + 1, eventCount: firstSequence + events.length } : null))
      return counted !== null && !TERMINAL.has(counted.status)
    },

    /**
     * The persisted events of `record` with `sequence_number > after`, read from chunk `fromChunk` on (a stream that
     * follows the run reads each chunk once), and the chunk to read from next.
     */
    async eventsAfter(record: BackgroundRunRecord, after: number, fromChunk = 0): Promise<{ events: JsonObject[]; nextChunk: number }> {
      const chunks = await repository.chunksFrom(record.id, fromChunk, record.chunkCount)
      // A run taken over starts its events again; the lost run's chunks are not its.
      const wanted = chunks.filter((chunk) => chunk.runId === record.runId)
      const opened = await Promise.all(wanted.map((chunk) => openContent(secrets, chunk.events, eventsData(record.id, chunk.index, record))))
      return { events: opened.flat().filter((event) => (event.sequence_number as number) > after), nextChunk: Math.max(fromChunk, record.chunkCount) }
    },

    /** Registers a run this process starts. */
    startLocal(id: string, runId: string): LocalRun {
      const run = newLocalRun(runId)
      local.set(id, run)
      return run
    },

    delete: (id: string) => repository.delete(id),
    sweepExpired,
    close: () => sweeping.stop(),

    /** Runs of `status`, a page at a time, for the sweep. */
    listByStatus: (status: BackgroundStatus, offset: number, limit: number) => repository.listByStatus(status, offset, limit),
  }
}

export type BackgroundRuns = ReturnType<typeof createBackgroundRuns>
