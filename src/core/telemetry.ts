/**
 * The gateway's telemetry: one typed event per thing an operator watches (a request ended, an upstream attempt ended,
 * a target ejected, a spend limit refused, a server tool ran, a stage ran, a store call returned, the streams in
 * flight changed). The engine and the pipeline decide and emit; observers (the access log, Prometheus metrics,
 * traces, a host's own) subscribe. docs/operations.md lists the events.
 *
 * A channel holds one function per event that somebody observes, and nothing for the others, so an emitter writes
 * `telemetry.attemptEnded?.({ … })`: with nobody observing, optional chaining skips the call and its argument, and
 * the hot path builds no event at all.
 */

/** An inbound request arrived and its route matched (or did not: `unmatched`). */
export interface RequestStarted {
  requestId: string
  method: string
  path: string
  /** The route's pattern (`POST /responses`), or `unmatched` for a 404 or 405: never a raw path. */
  route: string
  /** A route that runs a model: the access log writes a line for it. */
  isModelRequest: boolean
  /** The request's headers, for a trace continued from the caller's `traceparent`. */
  headers?: Headers
}

/** An inbound request answered (any route; `isModelRequest` for the routes that run models). */
export interface RequestEnded {
  requestId: string
  method: string
  path: string
  /** The route's pattern (`POST /responses`), or `unmatched` for a 404 or 405: never a raw path. */
  route: string
  /** A route that runs a model: the access log writes a line for it. */
  isModelRequest: boolean
  status: number
  /** The first 8 hex digits of the caller's key hash, once authenticated; never the key. */
  keyHash?: string
  workspaceId?: string
  /** The model the request asked for, once the request was prepared. */
  model?: string
  /** The response's id (`GET /generation?id=`), once there is one. */
  responseId?: string
  servedModel?: string
  provider?: string
  /** How many upstream attempts were sent. */
  attempts?: number
  isByok?: boolean
  inputTokens?: number
  outputTokens?: number
  /** In USD, as the response's usage reports it. */
  cost?: number
  /** `completed`, `incomplete`, `failed`, `client_closed`, `broken`. */
  finish?: string
  errorType?: string
  guardrailId?: string
  /** For a stream, from the request's arrival to its first content event. */
  timeToFirstTokenMs?: number
  latencyMs: number
  /**
   * What the request sent (`instructions` and `input`) and what it answered (the output items, Responses-shaped), only
   * for a workspace with `is_observability_broadcast_enabled`; never written to the access log.
   */
  content?: { input: unknown; output: unknown }
  /** The request's start event, the same object an observer of `requestStarted` saw. */
  started: RequestStarted
}

/** How an upstream attempt ended. */
export type AttemptEndOutcome = 'answered' | 'failed' | 'client_closed'

/** An upstream attempt is about to be sent. */
export interface AttemptStarted {
  requestId: string
  /** 1-based, among the attempts the request sent. */
  attemptNumber: number
  provider: string
  model: string
  /** The provider's own model id. */
  endpoint: string
  isByok: boolean
}

/** The attempt's upstream request is built and about to go: an observer may add headers (a trace's `traceparent`). */
export interface UpstreamSending {
  attempt: AttemptStarted
  headers: Record<string, string>
}

export interface AttemptEnded {
  requestId: string
  /** 1-based, among the attempts the request sent. */
  attemptNumber: number
  provider: string
  model: string
  isByok: boolean
  outcome: AttemptEndOutcome
  /** The upstream's status where it answered one, else the status the client would see; null when the client left. */
  status: number | null
  /** The failure's type (`provider_overloaded`, `timeout` …) when the attempt failed. */
  errorType?: string
  /** From sending the attempt to the upstream's response headers, when they came. */
  timeToFirstByteMs?: number
  durationMs: number
  /** The attempt's start event, when `attemptStarted` is observed. */
  started?: AttemptStarted
}

/** The fallback loop moves on to another attempt after one failed. */
export interface FallbackTaken {
  requestId: string
  /** The failed attempt's error type: why the request fell back. */
  reason: string
  fromProvider: string
  toProvider: string
}

/** Outlier detection skips a target for a while (src/engine/outlier-detection.ts). */
export interface OutlierEjected {
  /** `endpoint` (a provider's endpoint) or `byok` (a caller's key). */
  kind: 'endpoint' | 'byok'
  /** The provider, for an endpoint. */
  provider?: string
  seconds: number
}

/** A spend limit refused a request or a step of it (402). */
export interface SpendRefused {
  /** Which limit: `key`, `workspace_budget`, `guardrail`, `credits`. */
  limit: string
}

/** A server tool the gateway runs was called. */
export interface ServerToolCalled {
  requestId: string
  tool: string
  outcome: 'ok' | 'failed' | 'refused'
  durationMs: number
}

/** A request stage (src/engine/run-stage.ts) returned: its own time and the rest of the run inside it. */
export interface StageEnded {
  requestId: string
  stage: string
  isError: boolean
  durationMs: number
}

/** A call to the storage driver returned. */
export interface StoreCalled {
  /** The driver's method (`get`, `batch` …). */
  operation: string
  isError: boolean
  durationMs: number
}

/** The number of Responses streams in flight changed. */
export interface StreamsChanged {
  active: number
}

/** Every event, by the name an observer handles it under. */
export interface TelemetryEvents {
  requestStarted: RequestStarted
  requestEnded: RequestEnded
  attemptStarted: AttemptStarted
  upstreamSending: UpstreamSending
  attemptEnded: AttemptEnded
  fallbackTaken: FallbackTaken
  outlierEjected: OutlierEjected
  spendRefused: SpendRefused
  serverToolCalled: ServerToolCalled
  stageEnded: StageEnded
  storeCalled: StoreCalled
  streamsChanged: StreamsChanged
}

const EVENT_NAMES = [
  'requestStarted',
  'requestEnded',
  'attemptStarted',
  'upstreamSending',
  'attemptEnded',
  'fallbackTaken',
  'outlierEjected',
  'spendRefused',
  'serverToolCalled',
  'stageEnded',
  'storeCalled',
  'streamsChanged',
] as const satisfies ReadonlyArray<keyof TelemetryEvents>

/** Handles the events it names; the others are never built for it. */
export type TelemetryObserver = { readonly [Name in keyof TelemetryEvents]?: (event: TelemetryEvents[Name]) => void }

/** What emitters call: an entry is absent while nobody observes that event. */
export type Telemetry = TelemetryObserver

/** The channel with no observer: every emit is skipped. */
export const NO_TELEMETRY: Telemetry = Object.freeze({})

/**
 * The channel over `observers`. An observer that throws is reported to `onError` and never breaks the request that
 * emitted the event, nor the other observers.
 */
export const createTelemetry = (observers: readonly TelemetryObserver[], onError: (error: unknown, event: string) => void): Telemetry => {
  if (observers.length === 0) return NO_TELEMETRY
  const channel: Record<string, (event: never) => void> = {}
  for (const name of EVENT_NAMES) {
    const listeners = observers.flatMap((observer) => {
      const handle = observer[name] as ((event: unknown) => void) | undefined
      return handle ? [handle.bind(observer)] : []
    })
    if (listeners.length === 0) continue
    channel[name] = (event: unknown) => {
      for (const listener of listeners) {
        try {
          listener(event)
        } catch (error) {
          onError(error, name)
        }
      }
    }
  }
  return Object.freeze(channel) as Telemetry
}

/** Whether some observer handles `name`. */
export const isObserved = (observers: readonly TelemetryObserver[], name: keyof TelemetryEvents): boolean => observers.some((observer) => observer[name] !== undefined)

/**
 * A metrics exporter a gateway serves at its metrics path (`createGateway`'s `metrics`): it observes the telemetry and
 * renders what it counted in its exposition format. `modelgate/metrics` ships the Prometheus one.
 */
export interface MetricsExporter {
  readonly observer: TelemetryObserver
  readonly contentType: string
  render(): Promise<string>
  /** Stops what the exporter runs on its own (an event-loop monitor); called by `gateway.close()`. */
  close?(): void
}
