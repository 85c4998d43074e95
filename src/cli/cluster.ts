/**
 * `modelgate serve --workers N`: N worker processes serve one port through node:cluster. The primary serves no
 * request: it starts the workers, forwards signals, replaces a worker that dies, and exits once all have stopped.
 * Each worker is the single-process runner (src/cli/serve.ts) on the shared store, with three differences: the
 * first one alone prepares the store (a first management key, the start-up report) before the others start, it
 * tells the primary when it listens instead of printing, and the primary watches the parent process for all.
 */

import cluster, { type Worker } from 'node:cluster'
import { availableParallelism } from 'node:os'
import type { Logger } from '../core/logger'
import type { RunnerConfig } from './config'
import { createClusterScrapes } from './cluster-metrics'
import { isMessage } from './ipc-message'
import { formatFirstManagementKey } from './first-run'
import { shouldWatchParent, watchParent } from './parent-watch'
import { STREAM_FLUSH_MS } from './serve'
import { storeSharing } from './storage'
import { runnerLog } from './stderr-lines'

/** How many workers the setting asks for: `auto` is one per core the process may use. */
export const resolveWorkerCount = (setting: RunnerConfig['workers']): number => (setting === 'auto' ? availableParallelism() : (setting ?? 1))

/** Refuses more than one worker on a store that one process only may open, naming the setting and what to use. */
export const assertStoreShared = (config: RunnerConfig, workers: number) => {
  if (workers <= 1) return
  const sharing = storeSharing(config.storage)
  if (sharing.isShared) return
  const setting = config.workers === 'auto' ? `MODELGATE_WORKERS=auto (${workers} cores)` : `MODELGATE_WORKERS=${workers} (--workers ${workers})`
  throw new Error(`modelgate: ${setting} needs a store several processes can share, and ${sharing.why}: use ${sharing.instead}, or run one worker`)
}

/** What a worker is told: the configuration the primary resolved once, and whether it is the one that prepares the store. */
interface StartMessage {
  type: 'modelgate:start'
  config: RunnerConfig
  isFirst: boolean
}

/** What a worker says once it listens: where, and the first management key if it minted one (shown once, by the primary). */
export interface ReadyMessage {
  type: 'modelgate:ready'
  origin: string
  apiUrl: string
  firstManagementKey?: string
}

// A worker asks for its start message once it listens for it: one sent at fork could arrive while its modules load.
const ASK = 'modelgate:ask'

/** In a worker: asks the primary for the configuration and its part. */
export const askPrimary = (): Promise<Omit<StartMessage, 'type'>> =>
  new Promise((resolve) => {
    const onMessage = (message: unknown) => {
      if (!isMessage<StartMessage>(message, 'modelgate:start')) return
      process.off('message', onMessage)
      resolve({ config: message.config, isFirst: message.isFirst })
    }
    process.on('message', onMessage)
    process.send!({ type: ASK })
  })

/** In a worker: tells the primary it listens. */
export const announceReady = (ready: Omit<ReadyMessage, 'type'>) => void process.send!({ type: 'modelgate:ready', ...ready } satisfies ReadyMessage)

/** A worker's log lines say which worker wrote them. */
export const withWorkerField = (logger: Logger, worker: number): Logger => ({
  debug: (message, fields) => logger.debug(message, { worker, ...fields }),
  info: (message, fields) => logger.info(message, { worker, ...fields }),
  warn: (message, fields) => logger.warn(message, { worker, ...fields }),
  error: (message, fields) => logger.error(message, { worker, ...fields }),
  ...(logger.isEnabled ? { isEnabled: logger.isEnabled } : {}),
})

/** The first replacement of a worker waits this long; each further one in a row twice as long, up to the cap. */
export const RESTART_DELAY_MS = 500
export const MAX_RESTART_DELAY_MS = 30_000
/** A worker that served this long ends its slot's run of replacements. */
export const STABLE_AFTER_MS = 60_000
/** When this many replacements of a worker in a row died, none serving a minute, the gateway stops: something is broken. */
export const MAX_RESTARTS_IN_A_ROW = 10
/** Beyond the grace period and the streams' last flush, how long the primary waits for workers before killing them. */
const STOP_MARGIN_MS = 15_000

/**
 * After a worker of a slot died: how many replacements in a row that makes (a worker that served `STABLE_AFTER_MS`
 * ends the run), and how long to wait before the next, or `null` to give up.
 */
export const planRestart = (restartsInARow: number, servedMs: number): { restartsInARow: number; delayMs: number | null } => {
  const restarts = (servedMs >= STABLE_AFTER_MS ? 0 : restartsInARow) + 1
  if (restarts > MAX_RESTARTS_IN_A_ROW) return { restartsInARow: restarts, delayMs: null }
  return { restartsInARow: restarts, delayMs: Math.min(MAX_RESTART_DELAY_MS, RESTART_DELAY_MS * 2 ** (restarts - 1)) }
}

interface Slot {
  index: number
  /** Replacements in a row: reset once a worker of the slot has served `STABLE_AFTER_MS`. */
  restarts: number
  worker?: Worker
  startedAt: number
  isReady: boolean
}

/**
 * The primary: starts `count` workers (the first alone, then the others together), prints the listening line and a
 * first management key once all listen, and resolves with the exit code once every worker has stopped.
 */
export const runCluster = (config: RunnerConfig, count: number, logger: Logger): Promise<number> =>
  new Promise((resolve) => {
    const slots: Slot[] = Array.from({ length: count }, (_, index) => ({ index, restarts: 0, startedAt: 0, isReady: false }))
    const restartTimers = new Set<ReturnType<typeof setTimeout>>()
    let isServing = false
    let isStopping = false
    let exitCode = 0
    let first: ReadyMessage | undefined
    let killTimer: ReturnType<typeof setTimeout> | undefined
    let stopWatchingParent = () => {}

    const liveWorkers = () => slots.flatMap((slot) => (slot.worker ? [slot.worker] : []))
    const scrapes = createClusterScrapes(() => slots.flatMap((slot) => (slot.worker && slot.isReady ? [slot.worker] : [])))

    const finish = () => {
      clearTimeout(killTimer)
      stopWatchingParent()
      process.off('SIGINT', onSigint)
      process.off('SIGTERM', onSigterm)
      process.off('SIGHUP', onSighup)
      logger.info('stopped')
      resolve(exitCode)
    }

    const stop = (reason: string, signal: NodeJS.Signals = 'SIGTERM') => {
      if (isStopping) return
      isStopping = true
      logger.info('shutting down', { signal: reason, workers: liveWorkers().length })
      for (const timer of restartTimers) clearTimeout(timer)
      restartTimers.clear()
      // Each worker drains as a single runner does (src/cli/serve.ts); this only bounds a worker that hangs.
      for (const worker of liveWorkers()) worker.process.kill(signal)
      killTimer = setTimeout(
        () => {
          for (const worker of liveWorkers()) {
            logger.error('a worker did not stop in time; killing it', { worker: worker.id, pid: worker.process.pid })
            worker.process.kill('SIGKILL')
          }
        },
        config.shutdownGraceSeconds * 1000 + STREAM_FLUSH_MS + STOP_MARGIN_MS,
      )
      if (liveWorkers().length === 0) finish()
    }

    const start = (slot: Slot, isFirst: boolean) => {
      const worker = cluster.fork()
      Object.assign(slot, { worker, startedAt: performance.now(), isReady: false })
      worker.on('message', (message: unknown) => {
        if (isMessage(message, ASK)) worker.send({ type: 'modelgate:start', config, isFirst } satisfies StartMessage)
        else if (isMessage<ReadyMessage>(message, 'modelgate:ready')) onReady(slot, worker, message)
        else scrapes.handle(worker, message)
      })
      worker.once('exit', (code, signal) => onExit(slot, worker, code, signal))
    }

    const onReady = (slot: Slot, worker: Worker, ready: ReadyMessage) => {
      slot.isReady = true
      if (isServing) {
        logger.info('replacement worker listening', { worker: worker.id, pid: worker.process.pid })
        return
      }
      if (slot.index === 0) {
        first = ready
        // The first worker has prepared the store: the others find it ready, and no second key is minted.
        if (!isStopping) for (const other of slots.slice(1)) start(other, false)
      }
      if (isStopping || slots.some((each) => !each.isReady)) return
      isServing = true
      logger.info('workers listening', { workers: count, pids: liveWorkers().map((each) => each.process.pid) })
      runnerLog().flush()
      process.stdout.write(`modelgate listening on ${first!.origin} with ${count} workers\n`)
      // On stdout, never in the log: shown once, to whoever started the gateway.
      if (first!.firstManagementKey) process.stdout.write(formatFirstManagementKey(first!.firstManagementKey, first!.apiUrl))
    }

    const onExit = (slot: Slot, worker: Worker, code: number | null, signal: string | null) => {
      if (slot.worker === worker) slot.worker = undefined
      if (isStopping) {
        // One still starting may die of the signal before its handlers are in place: nothing of it was serving.
        if (code !== 0 && slot.isReady) exitCode = 1
        if (liveWorkers().length === 0) finish()
        return
      }
      if (!isServing) {
        // A worker that cannot start (a store it cannot reach, a port in use) said why on stderr; the others would too.
        logger.error('a worker failed to start; stopping', { worker: worker.id, code, signal })
        exitCode = 1
        stop('a worker failed to start')
        return
      }
      const { restartsInARow, delayMs } = planRestart(slot.restarts, performance.now() - slot.startedAt)
      slot.restarts = restartsInARow
      if (delayMs === null) {
        logger.error(`the last ${MAX_RESTARTS_IN_A_ROW} replacements of a worker each died within a minute; stopping`, { worker: worker.id, code, signal })
        exitCode = 1
        stop('workers keep dying')
        return
      }
      logger.warn('a worker exited unexpectedly; starting another', { worker: worker.id, pid: worker.process.pid, code, signal, restartInMs: delayMs, restartsInARow: slot.restarts })
      const timer = setTimeout(() => {
        restartTimers.delete(timer)
        start(slot, false)
      }, delayMs)
      restartTimers.add(timer)
    }

    // A terminal's Ctrl-C reaches the workers too (one process group); they ignore a repeat, so forwarding is safe.
    const onSigint = () => stop('SIGINT', 'SIGINT')
    const onSigterm = () => stop('SIGTERM', 'SIGTERM')
    // Price reloads: to workers that listen, whose SIGHUP handler is in place (before that, SIGHUP would kill them).
    const onSighup = () => {
      if (isStopping) return
      for (const slot of slots) if (slot.isReady) slot.worker?.process.kill('SIGHUP')
    }
    process.on('SIGINT', onSigint)
    process.on('SIGTERM', onSigterm)
    if (config.priceSource) process.on('SIGHUP', onSighup)
    if (shouldWatchParent(config.watchParent, process.env)) {
      stopWatchingParent = watchParent(() => stop('parent process exited'))
      logger.info('the gateway stops when its parent process exits', { parentPid: process.ppid })
    }
    logger.info('starting workers', { workers: count })
    start(slots[0]!, true)
  })
