/**
 * Background runs of `POST /responses` (docs/decisions.md, Background runs): the request runs detached from its HTTP
 * request, as a stream nobody reads but this module, which numbers its events, writes them to the store in chunks,
 * renews the run's lease and watches its cancel flag, and ends the record with the final Response object. The run
 * goes through `answerInference` like any request, so it is planned, billed and recorded once as any stream is; a
 * cancel stops it as a client leaving stops a stream (it pays for what the upstream produced).
 */

import { every, newLease } from '../core/lease'
import { isGatewayError } from '../core/errors'
import { randomId } from '../core/crypto'
import type { Logger } from '../core/logger'
import type { ChunkSink } from '../core/event-stream'
import { startPeriodicTask } from '../core/periodic'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import { RESPONSES_FORMAT } from '../formats/responses/reply'
import type { Caller } from '../pipeline/auth'
import type { GatewayRuntime } from '../pipeline/runtime'
import type { Repositories } from '../repositories'
import type { BackgroundRunContent, BackgroundRunRecord, BackgroundStatus } from '../repositories/background-runs'
import { TERMINAL, type BackgroundRuns, type LocalRun } from '../services/background-runs'
import type { JsonObject } from '../storage/contract'
import { prepareRequest } from '../engine/run'
import { prepareRecorded } from '../ledger/generation-record'
import type { RouteContext } from '../pipeline/route'
import { answerInference } from './inference'
import { withPreset } from './presets.config'
import { logprobsExtension } from './responses-body'
import { sessionIdOf } from './session-id'

export interface BackgroundRunner {
  runtime: GatewayRuntime
  background: BackgroundRuns
  repositories: Repositories
  logger: Logger
  now: () => Date
}

const FINAL_TYPES: Record<string, BackgroundStatus> = {
  'response.completed': 'completed',
  'response.incomplete': 'incomplete',
  'response.failed': 'failed',
}

/** The Response object in another state, as the queued one shows the request. */
export const withStatus = (response: JsonObject, status: BackgroundStatus, error: JsonObject | null = null): JsonObject => ({ ...response, status, error })

const failure = (error: unknown) => {
  const message = isGatewayError(error) && error.status < 500 ? error.message : 'The background run failed'
  return { code: isGatewayError(error) && error.status < 500 ? 'invalid_prompt' : 'server_error', message }
}

/** Reads the run's server-sent events back into their JSON objects as they are written. */
const eventSink = (onEvent: (event: JsonObject) => void, done: { resolve: () => void; reject: (error: unknown) => void }): ChunkSink => {
  let buffered = ''
  return {
    write(chunk) {
      buffered += chunk
      let end = buffered.indexOf('\n\n')
      while (end >= 0) {
        const block = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        for (const line of block.split('\n')) {
          if (line.startsWith('data: ') && line !== 'data: [DONE]') onEvent(JSON.parse(line.slice('data: '.length)) as JsonObject)
        }
        end = buffered.indexOf('\n\n')
      }
      return true
    },
    ready: () => Promise.resolve(),
    close: () => done.resolve(),
    fail: (error) => done.reject(error),
  }
}

/** The caller a run spends for: its key as it is now (a key disabled or deleted since fails the run). */
const callerOf = async (repositories: Repositories, record: BackgroundRunRecord): Promise<Caller | null> => {
  const key = await repositories.apiKeys.get(record.keyHash)
  if (!key || key.disabled) return null
  const account = await repositories.accounts.get(key.accountId)
  return account ? { key, account, flags: account.flags } : null
}

type PlanContext = Pick<RouteContext<unknown, unknown, unknown>, 'request' | 'requestId' | 'caller' | 'repositories' | 'runtime' | 'clientSignal' | 'now'>

/**
 * Refuses at once, with its status, what the request would be refused before any upstream call were it not in the
 * background (an unknown model, a guardrail's block, a setting no endpoint honours), and records the refusal as such a
 * request's is; nothing is queued then. What only the run meets (a spend limit, the upstream) ends it `failed`.
 */
export const assertPlannable = async (context: PlanContext, body: ResponsesRequestBody): Promise<void> => {
  const { runtime, caller, repositories, requestId, request } = context
  const { body: resolved, presetId } = await withPreset(repositories, caller, body)
  const sessionId = sessionIdOf(resolved.session_id, request.headers)
  const generation = { api: 'responses' as const, caller, requestId, sessionId, arrivedAt: context.now(), startedAt: performance.now(), ...(presetId ? { presetId } : {}) }
  const run = { caller, repositories, requestId, signal: context.clientSignal, isMetadataRequested: false, sessionId }
  await prepareRecorded(runtime.ledger, runtime.inference, generation, resolved, () => prepareRequest(runtime.inference, run, resolved, logprobsExtension(resolved)))
}

/** Runs `record` (queued, held by this process) detached; resolves once it is under way. */
export const startBackgroundRun = (runner: BackgroundRunner, record: BackgroundRunRecord, content: BackgroundRunContent, caller: Caller, request?: Request) => {
  const { background, logger } = runner
  const { id, runId } = record
  const local = background.startLocal(id, runId)
  const queued = content.response
  let pending: JsonObject[] = []
  let persisted = 0
  let final: { status: BackgroundStatus; response: JsonObject } | undefined
  let generationId: string | null = null
  let recordingGeneration: Promise<unknown> = Promise.resolve()

  const emit = (event: JsonObject) => {
    const numbered = { ...event, sequence_number: local.events.length }
    local.events.push(numbered)
    pending.push(numbered)
    local.notify()
  }
  const flush = async () => {
    if (pending.length === 0) return
    const batch = pending
    pending = []
    const first = persisted
    persisted += batch.length
    await background.appendEvents(record, runId, batch, first)
  }
  // One flush at a time, in order; a failed one is logged and its events stay in this process's copy.
  const flushing = startPeriodicTask(background.settings.flushIntervalMs, flush, (error) => logger.warn('could not write a background run’s events', { responseId: id, error }))

  emit({ type: 'response.created', response: queued })
  emit({ type: 'response.queued', response: queued })

  const stopHeartbeat = every(background.settings.heartbeatIntervalMs, async () => {
    try {
      const renewed = await background.ifCurrent(id, runId, (current) => ({ ...current, lease: newLease(background.settings, runner.now()) }))
      // Cancelled (here or by another gateway) or taken over: stop the upstream call.
      if (!renewed || renewed.isCancelRequested) local.controller.abort()
    } catch (error) {
      logger.warn('could not renew a background run’s lease', { responseId: id, error })
    }
  })

  const onEvent = (event: JsonObject) => {
    // The run's own start is ours: the queued events above already opened it.
    if (event.type === 'response.created') return
    const response = event.response as JsonObject | undefined
    if (response) {
      if (generationId === null) {
        generationId = response.id as string
        const noted = generationId
        // Written as soon as it is known, long before the run's usage record: a takeover reads it to tell a billed run.
        recordingGeneration = background.ifCurrent(id, runId, (current) => ({ ...current, generationId: noted })).catch((error: unknown) => {
          logger.warn('could not note a background run’s generation', { responseId: id, error })
          return null
        })
      }
      // The engine named the run's response itself: the client knows it by the id and time it was queued with.
      const patched = { ...response, id, created_at: queued.created_at ?? null }
      const status = FINAL_TYPES[event.type as string]
      if (status) final = { status, response: patched }
      emit({ ...event, response: patched })
    } else emit(event)
  }

  const run = async () => {
    const started = await background.ifCurrent(id, runId, (current) => ({ ...current, status: 'in_progress' }))
    if (!started) return
    // Run as a stream this module reads; `background` stays, so the response cache leaves the run alone.
    const body = { ...(content.request as unknown as ResponsesRequestBody), stream: true }
    const context = {
      request: request ?? new Request('http://background.invalid/'),
      requestId: `bg-${randomId()}`,
      caller,
      repositories: runner.repositories,
      runtime: runner.runtime,
      access: undefined,
      clientSignal: local.controller.signal,
      now: runner.now,
    }
    try {
      const reply = await answerInference(context, body, RESPONSES_FORMAT, 'responses', logprobsExtension(body))
      if (reply.kind === 'events') {
        await new Promise<void>((resolve, reject) => {
          const stop = reply.produce(eventSink(onEvent, { resolve, reject }))
          // A stopped session writes no more: the run ends here, billed for what it used as a stopped stream is.
          const onAbort = () => {
            stop()
            resolve()
          }
          if (local.controller.signal.aborted) onAbort()
          else local.controller.signal.addEventListener('abort', onAbort, { once: true })
        })
      }
    } catch (error) {
      if (!local.controller.signal.aborted) {
        const failed = withStatus(queued, 'failed', failure(error))
        final = { status: 'failed', response: failed }
        emit({ type: 'response.failed', response: failed })
      }
    }
    await recordingGeneration
    await flushing.stop()
    await flush()
    if (local.controller.signal.aborted) return
    const ending = final ?? { status: 'failed' as const, response: withStatus(queued, 'failed', { code: 'server_error', message: 'The background run ended without an answer' }) }
    // Stored before the record says it ended, so a client that polls `completed` can continue it at once; a cancel
    // that won the race meanwhile takes the stored answer away again.
    // A run taken over meanwhile (its process thought dead) stores nothing: the run that took it over answers.
    const latest = await background.get(id)
    const isCurrent = latest !== null && latest.runId === runId && !TERMINAL.has(latest.status)
    const stored = ending.status === 'failed' || !isCurrent ? null : runner.runtime.storedResponses
    const owner = { accountId: record.accountId, workspaceId: record.workspaceId }
    if (stored) {
      const workspace = { isObservabilityIoLoggingEnabled: 'plain' in record.content }
      await stored.save(id, owner, workspace, { response: ending.response, input: content.input, history: content.history })
    }
    const finished = await background.finish(record, runId, ending.status, ending.response)
    if (!finished && stored && (await background.get(id))?.status === 'cancelled') await stored.delete(id, owner)
  }

  const task = run()
    .catch((error) => logger.error('background run failed', { responseId: id, error }))
    .finally(() => {
      stopHeartbeat()
      void flushing.stop()
      local.isEnded = true
      local.notify()
      background.local.delete(id)
      background.tasks.delete(task)
    })
  background.tasks.add(task)
  return local
}

/**
 * Takes over `record` if its process died (its lease expired): a run of which nothing was billed runs again from the
 * start under the same id; one whose generation reached the usage ledger is failed instead, so it is never billed twice.
 */
const takeOver = async (runner: BackgroundRunner, abandoned: BackgroundRunRecord) => {
  const claimed = await runner.background.claimAbandoned(abandoned.id)
  if (!claimed) return
  runner.logger.warn('taking over an abandoned background run', { responseId: claimed.id, abandonedBy: abandoned.lease?.holder ?? null })
  const content = await runner.background.content(claimed)
  const billed = abandoned.generationId ? await runner.repositories.generations.get(abandoned.generationId) : null
  const caller = billed ? null : await callerOf(runner.repositories, claimed)
  if (!caller) {
    const message = billed ? 'The gateway running this response stopped after it was billed; its output was lost' : 'The API key of this response is no longer usable'
    await runner.background.finish(claimed, claimed.runId, 'failed', withStatus(content.response, 'failed', { code: 'server_error', message }))
    return
  }
  startBackgroundRun(runner, claimed, content, caller)
}

const PAGE_SIZE = 100

/** Takes over every abandoned background run in the store once. */
export const sweepAbandonedRuns = async (runner: BackgroundRunner): Promise<void> => {
  for (const status of ['queued', 'in_progress'] as const) {
    // A takeover moves an `in_progress` run back to `queued`, shifting later pages; the next sweep gets what this one skips.
    for (let offset = 0; ; offset += PAGE_SIZE) {
      const page = await runner.background.listByStatus(status, offset, PAGE_SIZE)
      for (const record of page) {
        if (!runner.background.local.has(record.id)) await takeOver(runner, record)
      }
      if (page.length < PAGE_SIZE) break
    }
  }
}

/**
 * Stops this process's runs (gateway close): each is aborted, billed for what its upstream produced as a stopped
 * stream is, and failed with a clear error, so that no run is left for a sweep to bill a second time.
 */
export const stopLocalRuns = async (runner: BackgroundRunner) => {
  const stopping = [...runner.background.local.entries()].map(async ([id, run]: [string, LocalRun]) => {
    run.controller.abort()
    const record = await runner.background.get(id)
    if (!record || TERMINAL.has(record.status)) return
    const content = await runner.background.content(record)
    const failed = withStatus(content.response, 'failed', { code: 'server_error', message: 'The gateway running this response shut down; create it again' })
    await runner.background.finish(record, run.runId, 'failed', failed)
  })
  await Promise.allSettled(stopping)
  await Promise.allSettled([...runner.background.tasks])
}
