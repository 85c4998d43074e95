/**
 * Prometheus metrics of one gateway (docs/operations.md, "Metrics"): an observer of its telemetry that counts into a
 * registry of its own (never prom-client's global one, so two gateways in one process keep their figures apart), and
 * renders them in the text exposition format. Labels are bounded: routes by pattern, models and providers from the
 * catalog, statuses, outcomes and error types; never a request id, a key or its hash.
 * @example
 * import { createPrometheusMetrics } from 'modelgate/metrics'
 * const gateway = createGateway({ metrics: { exporter: createPrometheusMetrics() } })   // GET /metrics
 */

import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { MetricsExporter } from '../core/telemetry'

export interface PrometheusMetricsOptions {
  /** Labels every series carries (`{ instance: 'eu-1' }`); none by default. */
  defaultLabels?: Record<string, string>
  /** How often the event loop's delay is sampled, in ms (default 20). */
  eventLoopResolutionMs?: number
}

export interface PrometheusMetrics extends MetricsExporter {
  /** The registry the metrics live in, for a host that adds its own. */
  readonly registry: Registry
  /** Stops sampling the event loop's delay. */
  close(): void
}

// Seconds: from a cache hit to a long reasoning answer.
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]
// Store calls are ms, rarely a second.
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

const seconds = (ms: number) => ms / 1000

export const createPrometheusMetrics = (options: PrometheusMetricsOptions = {}): PrometheusMetrics => {
  const registry = new Registry()
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels)
  const registers = [registry]

  const requests = new Counter({
    name: 'modelgate_requests_total',
    help: 'Requests answered, by route pattern, HTTP status, model and provider (empty where none).',
    labelNames: ['route', 'status', 'model', 'provider'] as const,
    registers,
  })
  const requestDuration = new Histogram({
    name: 'modelgate_request_duration_seconds',
    help: 'From a request arriving to its answer ending (a stream: its last event).',
    labelNames: ['route', 'provider'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  })
  const timeToFirstToken = new Histogram({
    name: 'modelgate_time_to_first_token_seconds',
    help: "From a streamed request arriving to its first content event.",
    labelNames: ['model', 'provider'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  })
  const tokens = new Counter({
    name: 'modelgate_tokens_total',
    help: 'Tokens of answered requests, by direction (input, output), model and provider.',
    labelNames: ['direction', 'model', 'provider'] as const,
    registers,
  })
  const cost = new Counter({
    name: 'modelgate_cost_usd_total',
    help: "What answered requests cost, in USD, as their usage reports it.",
    labelNames: ['model', 'provider'] as const,
    registers,
  })
  const attempts = new Counter({
    name: 'modelgate_upstream_attempts_total',
    help: 'Upstream attempts, by provider, outcome (answered, failed, client_closed) and error type.',
    labelNames: ['provider', 'outcome', 'error_type'] as const,
    registers,
  })
  const timeToFirstByte = new Histogram({
    name: 'modelgate_upstream_time_to_first_byte_seconds',
    help: "From sending an upstream attempt to the provider's response headers.",
    labelNames: ['provider'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  })
  const fallbacks = new Counter({
    name: 'modelgate_fallbacks_total',
    help: 'Times a request moved on to another attempt, by the failed attempt\'s provider and error type.',
    labelNames: ['provider', 'reason'] as const,
    registers,
  })
  const ejections = new Counter({
    name: 'modelgate_outlier_ejections_total',
    help: 'Targets skipped for a while after repeated failures, by kind (endpoint, byok) and provider.',
    labelNames: ['kind', 'provider'] as const,
    registers,
  })
  const spendRefusals = new Counter({
    name: 'modelgate_spend_limit_refusals_total',
    help: 'Requests or steps refused with 402 by a spend limit, by limit (key, workspace_budget, guardrail, credits).',
    labelNames: ['limit'] as const,
    registers,
  })
  const serverTools = new Counter({
    name: 'modelgate_server_tool_calls_total',
    help: 'Server-tool calls the gateway ran, by tool and outcome (ok, failed, refused).',
    labelNames: ['tool', 'outcome'] as const,
    registers,
  })
  const stageDuration = new Histogram({
    name: 'modelgate_stage_duration_seconds',
    help: 'Time in each request stage, the stages inside it included.',
    labelNames: ['stage'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  })
  const storeDuration = new Histogram({
    name: 'modelgate_store_call_duration_seconds',
    help: 'Storage driver calls, by operation.',
    labelNames: ['operation'] as const,
    buckets: STORE_BUCKETS,
    registers,
  })
  const storeErrors = new Counter({
    name: 'modelgate_store_call_errors_total',
    help: 'Storage driver calls that failed, by operation.',
    labelNames: ['operation'] as const,
    registers,
  })
  const activeStreams = new Gauge({ name: 'modelgate_active_streams', help: 'Streamed answers in flight.', registers })

  const delay = monitorEventLoopDelay({ resolution: options.eventLoopResolutionMs ?? 20 })
  delay.enable()
  // Each scrape reads the delay since the last one, then starts afresh.
  new Gauge({
    name: 'modelgate_event_loop_delay_seconds',
    help: 'Event-loop delay since the previous scrape, by quantile (1 is the maximum).',
    labelNames: ['quantile'] as const,
    registers,
    collect() {
      const at = (nanoseconds: number) => (Number.isFinite(nanoseconds) ? nanoseconds / 1e9 : 0)
      this.set({ quantile: '0.5' }, at(delay.percentile(50)))
      this.set({ quantile: '0.99' }, at(delay.percentile(99)))
      this.set({ quantile: '1' }, at(delay.max))
      delay.reset()
    },
  })

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    close: () => delay.disable(),
    observer: {
      requestEnded(event) {
        const model = event.servedModel ?? event.model ?? ''
        const provider = event.provider ?? ''
        requests.inc({ route: event.route, status: String(event.status), model, provider })
        requestDuration.observe({ route: event.route, provider }, seconds(event.latencyMs))
        if (event.timeToFirstTokenMs !== undefined) timeToFirstToken.observe({ model, provider }, seconds(event.timeToFirstTokenMs))
        if (event.inputTokens) tokens.inc({ direction: 'input', model, provider }, event.inputTokens)
        if (event.outputTokens) tokens.inc({ direction: 'output', model, provider }, event.outputTokens)
        if (event.cost) cost.inc({ model, provider }, event.cost)
      },
      attemptEnded(event) {
        attempts.inc({ provider: event.provider, outcome: event.outcome, error_type: event.errorType ?? '' })
        if (event.timeToFirstByteMs !== undefined) timeToFirstByte.observe({ provider: event.provider }, seconds(event.timeToFirstByteMs))
      },
      fallbackTaken: (event) => fallbacks.inc({ provider: event.fromProvider, reason: event.reason }),
      outlierEjected: (event) => ejections.inc({ kind: event.kind, provider: event.provider ?? '' }),
      spendRefused: (event) => spendRefusals.inc({ limit: event.limit }),
      serverToolCalled: (event) => serverTools.inc({ tool: event.tool, outcome: event.outcome }),
      stageEnded: (event) => stageDuration.observe({ stage: event.stage }, seconds(event.durationMs)),
      storeCalled(event) {
        storeDuration.observe({ operation: event.operation }, seconds(event.durationMs))
        if (event.isError) storeErrors.inc({ operation: event.operation })
      },
      streamsChanged: (event) => activeStreams.set(event.active),
    },
  }
}
