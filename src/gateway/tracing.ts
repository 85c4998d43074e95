/**
 * Traces (docs/operations.md, "Traces"): an observer of the gateway's telemetry that turns its events into
 * OpenTelemetry spans through `@opentelemetry/api`, which records nothing unless the host (or the runner) registered
 * an SDK. One server span per inbound request, continued from the caller's `traceparent`; a client span per upstream
 * attempt, whose context goes to the upstream as its `traceparent`; a span per request stage and per server-tool call.
 * Attributes follow the OpenTelemetry GenAI semantic conventions (`gen_ai.*`), with the gateway's own under
 * `modelgate.*`; never a key, only its hash prefix.
 */

import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api'
import type { AttemptStarted, RequestEnded, RequestStarted, TelemetryObserver } from '../core/telemetry'

const TRACER_NAME = 'modelgate'

const HEADERS: TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
}

/** The GenAI operation a model route runs. */
const operationOf = (route: string) => (route.endsWith('/embeddings') ? 'embeddings' : 'chat')

const defined = (attributes: Record<string, string | number | boolean | string[] | undefined>): Attributes => {
  const kept: Attributes = {}
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) kept[name] = value
  return kept
}

/** Content attributes are cut at this many characters: a trace backend is no archive of conversations. */
const MAX_CONTENT_CHARACTERS = 32 * 1024

const contentText = (value: unknown) => {
  const text = JSON.stringify(value) ?? ''
  return text.length > MAX_CONTENT_CHARACTERS ? `${text.slice(0, MAX_CONTENT_CHARACTERS)}…` : text
}

const requestAttributes = (event: RequestEnded): Attributes =>
  defined({
    'http.response.status_code': event.status,
    ...(event.started.isModelRequest
      ? {
          'gen_ai.operation.name': operationOf(event.route),
          'gen_ai.request.model': event.model,
          'gen_ai.response.model': event.servedModel,
          'gen_ai.response.id': event.responseId,
          'gen_ai.provider.name': event.provider,
          'gen_ai.usage.input_tokens': event.inputTokens,
          'gen_ai.usage.output_tokens': event.outputTokens,
          'gen_ai.response.finish_reasons': event.finish === undefined ? undefined : [event.finish],
        }
      : {}),
    'modelgate.cost_usd': event.cost,
    'modelgate.attempts': event.attempts,
    'modelgate.is_byok': event.isByok,
    'modelgate.key_hash_prefix': event.keyHash,
    'modelgate.workspace_id': event.workspaceId,
    'modelgate.time_to_first_token_ms': event.timeToFirstTokenMs,
    'modelgate.guardrail_id': event.guardrailId,
    'error.type': event.errorType,
    // Only for a workspace with is_observability_broadcast_enabled (docs/operations.md, "Traces"): Responses-shaped JSON.
    'modelgate.request.content': event.content ? contentText(event.content.input) : undefined,
    'modelgate.response.content': event.content ? contentText(event.content.output) : undefined,
  })

/** A span for work that has just ended and took `durationMs`: its start is set back by that much. */
const endedSpan = (tracer: Tracer, name: string, parent: Span | undefined, durationMs: number, attributes: Attributes, isError: boolean) => {
  const now = Date.now()
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, startTime: now - durationMs, attributes }, parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT)
  if (isError) span.setStatus({ code: SpanStatusCode.ERROR })
  span.end(now)
}

export type TraceObserver = TelemetryObserver & {
  /** The context a request's work runs in (its span's), so the store calls it makes are its children. */
  contextOf(started: RequestStarted): Context
}

/** The trace observer; spans go to `provider`, or to the globally registered one (a no-op until an SDK registers). */
export const createTraceObserver = (provider?: TracerProvider): TraceObserver => {
  // Read at each span, so an SDK the host registers after createGateway is still used.
  const tracer = () => (provider ?? trace.getTracerProvider()).getTracer(TRACER_NAME)
  const requests = new WeakMap<RequestStarted, Span>()
  // The parent of a request's attempts, stages and tool calls, which carry its id.
  const byRequestId = new Map<string, Span>()
  const attempts = new WeakMap<AttemptStarted, Span>()
  // Why the request fell back, for its next attempt's span.
  const fallbackReasons = new Map<string, string>()
  // Request spans still open: a store call in a context whose request has ended (a batched write) gets no span.
  const open = new WeakSet<Span>()
  // The request span active where an event happened, while that request is open: the store and the events that name
  // no request find theirs this way (only where the host's SDK propagates async context).
  const activeRequestSpan = () => {
    const span = trace.getSpan(context.active())
    return span && open.has(span) ? span : undefined
  }
  return {
    contextOf(started) {
      const span = requests.get(started)
      return span ? trace.setSpan(context.active(), span) : context.active()
    },
    requestStarted(event) {
      const parent = event.headers ? propagation.extract(ROOT_CONTEXT, event.headers, HEADERS) : ROOT_CONTEXT
      const span = tracer().startSpan(
        event.route,
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': event.method, 'http.route': event.route, 'url.path': event.path, 'modelgate.request_id': event.requestId },
        },
        parent,
      )
      requests.set(event, span)
      open.add(span)
      byRequestId.set(event.requestId, span)
    },
    requestEnded(event) {
      const span = requests.get(event.started)
      if (!span) return
      requests.delete(event.started)
      open.delete(span)
      if (byRequestId.get(event.requestId) === span) byRequestId.delete(event.requestId)
      fallbackReasons.delete(event.requestId)
      span.setAttributes(requestAttributes(event))
      if (event.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
    },
    fallbackTaken(event) {
      fallbackReasons.set(event.requestId, event.reason)
    },
    attemptStarted(event) {
      const parent = byRequestId.get(event.requestId)
      const reason = fallbackReasons.get(event.requestId)
      fallbackReasons.delete(event.requestId)
      const span = tracer().startSpan(
        `chat ${event.model}`,
        {
          kind: SpanKind.CLIENT,
          attributes: defined({
            'gen_ai.operation.name': 'chat',
            'gen_ai.request.model': event.model,
            'gen_ai.provider.name': event.provider,
            'modelgate.attempt': event.attemptNumber,
            'modelgate.endpoint_model': event.endpoint,
            'modelgate.is_byok': event.isByok,
            'modelgate.fallback_reason': reason,
          }),
        },
        parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
      )
      attempts.set(event, span)
    },
    upstreamSending(event) {
      const span = attempts.get(event.attempt)
      if (span) propagation.inject(trace.setSpan(ROOT_CONTEXT, span), event.headers)
    },
    attemptEnded(event) {
      const span = event.started && attempts.get(event.started)
      if (!span) return
      attempts.delete(event.started!)
      span.setAttributes(
        defined({
          'modelgate.outcome': event.outcome,
          'http.response.status_code': event.status ?? undefined,
          'error.type': event.errorType,
          'modelgate.time_to_first_byte_ms': event.timeToFirstByteMs,
        }),
      )
      if (event.outcome === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, ...(event.errorType ? { message: event.errorType } : {}) })
      span.end()
    },
    stageEnded(event) {
      endedSpan(tracer(), `stage ${event.stage}`, byRequestId.get(event.requestId), event.durationMs, { 'modelgate.stage': event.stage }, event.isError)
    },
    storeCalled(event) {
      const parent = activeRequestSpan()
      if (!parent) return
      endedSpan(tracer(), `store ${event.operation}`, parent, event.durationMs, { 'db.operation.name': event.operation }, event.isError)
    },
    // Neither event names its request: it lands on the request span active where it happened, as a store call does.
    outlierEjected(event) {
      activeRequestSpan()?.addEvent(
        'modelgate.outlier_ejected',
        defined({ 'modelgate.ejected.kind': event.kind, 'gen_ai.provider.name': event.provider, 'modelgate.ejected.seconds': event.seconds }),
      )
    },
    spendRefused(event) {
      activeRequestSpan()?.addEvent('modelgate.spend_refused', { 'modelgate.spend_limit': event.limit })
    },
    serverToolCalled(event) {
      endedSpan(
        tracer(),
        `execute_tool ${event.tool}`,
        byRequestId.get(event.requestId),
        event.durationMs,
        { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': event.tool, 'modelgate.outcome': event.outcome },
        event.outcome === 'failed',
      )
    },
  }
}
