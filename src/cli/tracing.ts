/**
 * The runner's trace export (docs/operations.md, "Traces"): when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set, the OpenTelemetry trace SDK starts with a batching OTLP exporter and the
 * gateway's spans go to it. The SDK and the exporters are imported only then, so a runner without tracing loads none
 * of them. The exporters read the standard variables themselves (endpoint, headers, timeout, compression), as the
 * batch processor does (`OTEL_BSP_*`) and the resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`).
 */

import { version } from '../../package.json'

/** The protocols shipped: OTLP over HTTP, as JSON or protobuf (the specification's default). */
const PROTOCOLS = ['http/protobuf', 'http/json'] as const
type Protocol = (typeof PROTOCOLS)[number]

export interface TraceExport {
  /** Sends the spans still batched, then stops the SDK. */
  shutdown(): Promise<void>
}

/** Whether the environment asks for trace export: an OTLP endpoint set, the SDK not disabled, no other exporter named. */
export const isTraceExportConfigured = (environment: Record<string, string | undefined>): boolean => {
  if (environment.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const exporter = environment.OTEL_TRACES_EXPORTER?.trim().toLowerCase()
  if (exporter === 'none') return false
  if (exporter !== undefined && exporter !== '' && exporter !== 'otlp') {
    throw new Error(`modelgate: OTEL_TRACES_EXPORTER=${exporter} is not shipped: the runner exports traces with otlp (or none)`)
  }
  return Boolean(environment.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || environment.OTEL_EXPORTER_OTLP_ENDPOINT?.trim())
}

/** The OTLP protocol the environment names; a start-up error for one the runner does not ship. */
export const traceProtocolOf = (environment: Record<string, string | undefined>): Protocol => {
  const named = (environment.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? environment.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim()
  if (named === undefined || named === '') return 'http/protobuf'
  if ((PROTOCOLS as readonly string[]).includes(named)) return named as Protocol
  const variable = environment.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
  throw new Error(`modelgate: ${variable}=${named} is not supported: the runner exports traces over http/protobuf or http/json (grpc is not shipped)`)
}

/** Starts the SDK and registers it globally (its W3C propagator included). */
export const startTraceExport = async (environment: Record<string, string | undefined>): Promise<TraceExport> => {
  const protocol = traceProtocolOf(environment)
  const [{ NodeTracerProvider, BatchSpanProcessor }, resources, { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ])
  const { OTLPTraceExporter } = protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto')
  // The service is `modelgate` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name it (the environment wins).
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'modelgate', [ATTR_SERVICE_VERSION]: version }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] })
  provider.register()
  return { shutdown: () => provider.shutdown() }
}
