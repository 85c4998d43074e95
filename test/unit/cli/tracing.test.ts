/** When the runner exports traces, and over which protocol: the standard OTEL_* variables decide. */

import { describe, expect, it } from 'vitest'
import { isTraceExportConfigured, traceProtocolOf } from '../../../src/cli/tracing'

describe('the runner trace export settings', () => {
  it('is on when an OTLP endpoint is set, unless the SDK is disabled or no exporter is asked for', () => {
    expect(isTraceExportConfigured({})).toBe(false)
    expect(isTraceExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true)
    expect(isTraceExportConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true)
    expect(isTraceExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false)
    expect(isTraceExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false)
    expect(isTraceExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true)
    expect(() => isTraceExportConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow('OTEL_TRACES_EXPORTER=zipkin is not shipped')
  })

  it('takes http/protobuf by default, http/json when asked, the traces variable first, and refuses grpc', () => {
    expect(traceProtocolOf({})).toBe('http/protobuf')
    expect(traceProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json')
    expect(traceProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toBe('http/json')
    expect(() => traceProtocolOf({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported')
    expect(() => traceProtocolOf({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toThrow('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc is not supported')
  })
})
