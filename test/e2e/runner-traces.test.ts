/**
 * The runner exports traces over OTLP/HTTP when the standard OTEL_* variables ask for it: a fallback request (the
 * first provider answers 503, the second answers) reaches a loopback OTLP receiver as a server span continued from
 * the caller's traceparent and two attempt spans under it, with their GenAI attributes; the answering upstream was
 * sent its attempt's traceparent. An unshipped protocol (grpc) refuses the start. (Run after `npm run build`.)
 */

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runToEnd, startListening, stopAndDrain, type RunningProcess } from '../helpers/process'
import { fixture, startUpstream, type Upstream } from '../helpers/upstream'

const CLI = resolve(__dirname, '../../dist/cli.js')
const OPERATOR_KEY = 'operator-key-traces-0123456789'
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'

interface OtlpAttribute {
  key: string
  value: { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean; arrayValue?: { values: Array<{ stringValue?: string }> } }
}
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: OtlpAttribute[]
  status?: { code?: number }
}
interface OtlpExport {
  resourceSpans: Array<{ resource: { attributes: OtlpAttribute[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>
}

/** A loopback OTLP/HTTP receiver taking JSON exports at /v1/traces. */
const startReceiver = async () => {
  const exports: OtlpExport[] = []
  const contentTypes: string[] = []
  const server: Server = createServer((request, response) => {
    let text = ''
    request.on('data', (chunk: Buffer) => (text += chunk.toString()))
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') {
        contentTypes.push(String(request.headers['content-type']))
        exports.push(JSON.parse(text) as OtlpExport)
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      } else response.writeHead(404).end()
    })
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    contentTypes,
    spans: () => exports.flatMap((batch) => batch.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))),
    resources: () => exports.flatMap((batch) => batch.resourceSpans.map((resource) => resource.resource)),
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  }
}

const valueOf = (attributes: OtlpAttribute[], key: string): unknown => {
  const value = attributes.find((attribute) => attribute.key === key)?.value
  if (!value) return undefined
  if (value.arrayValue) return value.arrayValue.values.map((item) => item.stringValue)
  if (value.intValue !== undefined) return Number(value.intValue)
  return value.stringValue ?? value.doubleValue ?? value.boolValue
}

describe('runner: traces over OTLP', () => {
  let dataDir: string
  let alpha: Upstream
  let beta: Upstream
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  const running: RunningProcess[] = []

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'modelgate-runner-traces-'))
    alpha = await startUpstream(() => ({ status: 503, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: 'down' } }) }))
    beta = await startUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat', 'text.json') }))
    receiver = await startReceiver()
  })
  afterEach(async () => {
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')))
    await Promise.all([alpha.close(), beta.close(), receiver.close()])
    await rm(dataDir, { recursive: true, force: true })
  })

  const configFile = async () => {
    const path = join(dataDir, 'modelgate.json')
    const pricing = { prompt: 0.000001, completion: 0.000002 }
    await writeFile(
      path,
      JSON.stringify({
        storage: 'memory',
        // Alpha first every time, so the request falls back from it to beta (the weighted pick could start at beta).
        routingBalancing: 'cheapest',
        providers: {
          alpha: { api: 'openai-chat', baseURL: alpha.url, apiKey: 'sk-alpha-0123456789abcdef' },
          beta: { api: 'openai-chat', baseURL: beta.url, apiKey: 'sk-beta-0123456789abcdef' },
        },
        models: [
          {
            slug: 'test/model',
            name: 'Test model',
            endpoints: [
              { provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing },
              { provider: 'beta', model: 'beta-model', contextLength: 8192, pricing },
            ],
          },
        ],
      }),
    )
    return path
  }

  it('sends the spans of a fallback request to the OTLP endpoint, continued from the caller and passed upstream', async () => {
    const server = await startListening('node', [CLI, 'serve'], {
      env: {
        MODELGATE_DATA_DIR: dataDir,
        MODELGATE_PORT: '0',
        MODELGATE_LOG_LEVEL: 'error',
        MODELGATE_CONFIG: await configFile(),
        MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'gateway-under-test',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    })
    running.push(server)
    const created = await fetch(`${server.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'caller' }),
    })
    const { key } = (await created.json()) as { key: string }
    const answered = await fetch(`${server.url}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ model: 'test/model', input: 'hi' }),
    })
    expect(answered.status).toBe(200)
    const body = (await answered.json()) as { usage: { input_tokens: number; output_tokens: number } }
    // The shutdown sends what is still batched.
    expect(await stopAndDrain(server, 'SIGTERM')).toBe(0)

    expect(receiver.contentTypes.every((type) => type.startsWith('application/json'))).toBe(true)
    const spans = receiver.spans().filter((span) => span.traceId.toLowerCase() === CALLER_TRACE)
    const request = spans.find((span) => span.name === 'POST /responses')!
    expect(request).toBeDefined()
    expect(request.parentSpanId?.toLowerCase()).toBe(CALLER_SPAN)
    expect(valueOf(request.attributes, 'gen_ai.operation.name')).toBe('chat')
    expect(valueOf(request.attributes, 'gen_ai.request.model')).toBe('test/model')
    expect(valueOf(request.attributes, 'gen_ai.provider.name')).toBe('beta')
    expect(valueOf(request.attributes, 'gen_ai.usage.input_tokens')).toBe(body.usage.input_tokens)
    expect(valueOf(request.attributes, 'gen_ai.usage.output_tokens')).toBe(body.usage.output_tokens)
    expect(valueOf(request.attributes, 'gen_ai.response.finish_reasons')).toEqual(['completed'])
    expect(valueOf(request.attributes, 'modelgate.key_hash_prefix')).toMatch(/^[0-9a-f]{8}$/)

    const attempts = spans.filter((span) => span.name === 'chat test/model').sort((a, b) => Number(valueOf(a.attributes, 'modelgate.attempt')) - Number(valueOf(b.attributes, 'modelgate.attempt')))
    expect(attempts).toHaveLength(2)
    for (const attempt of attempts) expect(attempt.parentSpanId?.toLowerCase()).toBe(request.spanId.toLowerCase())
    expect(valueOf(attempts[0]!.attributes, 'gen_ai.provider.name')).toBe('alpha')
    expect(valueOf(attempts[0]!.attributes, 'modelgate.outcome')).toBe('failed')
    expect(valueOf(attempts[0]!.attributes, 'http.response.status_code')).toBe(503)
    expect(valueOf(attempts[1]!.attributes, 'gen_ai.provider.name')).toBe('beta')
    expect(valueOf(attempts[1]!.attributes, 'modelgate.fallback_reason')).toBe(valueOf(attempts[0]!.attributes, 'error.type'))
    expect(valueOf(attempts[1]!.attributes, 'modelgate.time_to_first_byte_ms')).toBeTypeOf('number')
    expect(beta.requests.at(-1)!.headers.traceparent).toBe(`00-${CALLER_TRACE}-${attempts[1]!.spanId.toLowerCase()}-01`)

    const resource = receiver.resources()[0]!
    expect(valueOf(resource.attributes, 'service.name')).toBe('gateway-under-test')
    expect(valueOf(resource.attributes, 'deployment.environment.name')).toBe('test')
    expect(JSON.stringify(receiver.spans())).not.toContain(key)
  })

  it('refuses to start with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, which is not shipped', async () => {
    const result = await runToEnd('node', [CLI, 'serve'], {
      env: {
        MODELGATE_DATA_DIR: dataDir,
        MODELGATE_PORT: '0',
        MODELGATE_STORAGE: 'memory',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      },
    })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported')
  })
})
