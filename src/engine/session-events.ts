/**
 * What running a response yields, independent of any wire format: a session of typed events for a
 * stream, or the final result for a whole answer. Writers (src/formats/) encode both.
 */

import type { ItemEvent, RelayedEvent } from '../providers/events'
import type { OutputItem } from '../providers/types'
import type { BilledUsage } from './billing'
import type { ResponsesRequestBody } from './request.schemas'

/** Who answered: the endpoint of the attempt that served the response. */
export interface ServedBy {
  model: string
  provider: string
  /** The provider's display name (`OpenAI`), as OpenRouter's Chat Completions answers name it. */
  providerName: string
  /** 1-based: the attempt's position among those sent. */
  attempt: number
  isByok: boolean
}

/** A failure reported in the response itself; each writer names it in its own wire terms. */
export interface ResponseFailure {
  status: number
  /** The canonical `error_type` (spec), e.g. `rate_limit_exceeded`, `server`. */
  errorType: string
  /** Safe to show: secrets redacted, internal errors reduced to a generic message. */
  message: string
  /**
   * Set when the gateway ended the response itself because it is shutting down (`gateway.endStreams`), whatever
   * message the host gave: neither the upstream nor the client ended it, and what it used is still to be charged.
   */
  isShutdown?: true
}

export interface ResponseResult {
  id: string
  /** Seconds since the epoch, on the gateway's clock. */
  createdAt: number
  completedAt: number
  /** The model that served, or the one requested when none did. */
  model: string
  status: 'completed' | 'incomplete' | 'failed'
  output: OutputItem[]
  /** Priced with the serving endpoint's prices; null when nothing was served. */
  usage: BilledUsage | null
  /** Set when the upstream reported no usage and the gateway counted it itself (embeddings from some providers). */
  isUsageEstimated?: boolean
  error: ResponseFailure | null
  incompleteDetails: { reason: string } | null
  /** The requested stop sequence that ended the answer, when the upstream said which. */
  stopSequence?: string
  /**
   * The processing tier the upstream says served the answer (`default`, `flex`, `scale`, `priority`); absent when it
   * said none, and the writers then echo the tier asked for.
   */
  serviceTier?: string
  /** Present when the caller asked for it. */
  serviceMetadata?: Record<string, unknown>
  servedBy: ServedBy | null
}

export type SessionEvent =
  /** The response exists: `servedBy` is null when it starts only to report that every attempt failed. */
  | { type: 'started'; id: string; createdAt: number; model: string; servedBy: ServedBy | null }
  | ItemEvent
  | { type: 'relayed'; event: RelayedEvent }
  /** `debug.echo_upstream_body`: what was sent upstream, secrets redacted. Comes before `started`. */
  | { type: 'debug'; upstreamBody: unknown; provider: string }
  /** Nothing to say yet, but the connection must stay open (long reasoning, a slow fallback). */
  | { type: 'keep_alive' }
  | { type: 'usage'; usage: BilledUsage }
  /** An in-band failure; the `finished` event that follows carries it too. */
  | { type: 'error'; error: ResponseFailure }
  | { type: 'finished'; result: ResponseResult }

/** Where a session writes its events. */
export interface EventSink<Event> {
  /** Takes an event; `false` asks the session to wait for `ready()` before the next one. */
  write(event: Event): boolean
  /** Resolves when the consumer can take more (or has gone away). */
  ready(): Promise<void>
  /**
   * The session ended. `stopped` is set when it ended early because its client went away (the request's signal
   * aborted before any consumer stopped it): what the answer had used, reckoned as a stop would have.
   */
  close(stopped?: StoppedUsage): void
  /** Ends the session as broken (a bug): the consumer must not take what it got for a whole answer. */
  fail(error: unknown): void
}

/**
 * What a stream stopped by its consumer had used, priced (docs/decisions.md, Usage ledger "Cancelled streams"):
 * the upstream's usage where it arrived before the stop, an estimate where it did not (stopped-usage.ts), plus
 * whatever earlier turns, tools or runs of the response already cost. The spend settlement and the generation
 * record both take it as it is, so they charge the same.
 */
export interface StoppedUsage {
  usage: BilledUsage
  /** Whether any part of `usage` is an estimate. */
  isEstimated: boolean
}

/** A streamed response in progress: it starts producing when a consumer starts it, at the consumer's pace. */
export interface ResponseSession {
  readonly request: ResponsesRequestBody
  /** The gateway's own time before the stream was handed over (routing, key decryption), upstream waits excluded. */
  readonly overheadMs: number
  /**
   * Starts the events into `sink`; returns the function that stops the session when the consumer goes away,
   * which tells what the answer used when it was stopped after `started`.
   */
  start(sink: EventSink<SessionEvent>): () => StoppedUsage | undefined
}

/** A whole answer. */
export interface WholeAnswer {
  readonly request: ResponsesRequestBody
  readonly result: ResponseResult
  readonly overheadMs: number
}
