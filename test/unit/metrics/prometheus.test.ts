/**
 * The Prometheus metrics of a gateway: counted from its telemetry, served at /metrics to management keys (or to
 * anyone when public), in a registry of its own so two gateways in one process keep their figures apart.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createPrometheusMetrics } from '../../../src/metrics/prometheus'
import { createTestGateway, TEST_ORIGIN, type TestGateway, type TestGatewayOptions } from '../../../src/testing/test-gateway'
import { scriptedProvider } from '../../../src/testing/scripted-provider'

const opened: TestGateway[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((gateway) => gateway.close()))
})

const start = async (options: TestGatewayOptions = {}, metrics: { isPublic?: boolean; path?: string | false } = {}) => {
  const exporter = createPrometheusMetrics()
  const gateway = await createTestGateway({ ...options, metrics: { exporter, ...metrics } })
  opened.push(gateway)
  return gateway
}

const scrape = async (gateway: TestGateway, key: string | null = gateway.managementKey, path = '/metrics') => {
  const response = await gateway.gateway.fetch(new Request(`${TEST_ORIGIN}${path}`, { headers: key === null ? {} : { authorization: `Bearer ${key}` } }))
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() }
}

/** The sum of the samples of `name` whose labels include `labels`. */
const sample = (text: string, name: string, labels: Record<string, string> = {}) => {
  let sum = 0
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1], pair[2]]))
    if (Object.entries(labels).every(([label, value]) => found[label] === value)) sum += Number(match[3])
  }
  return sum
}

describe('Prometheus metrics', () => {
  it('moves modelgate_requests_total by exactly the number of requests answered', async () => {
    const gateway = await start({ providers: { alpha: scriptedProvider({ reply: [{ type: 'text', text: 'Hi' }, { type: 'usage', inputTokens: 5, outputTokens: 3 }] }) } })
    const labels = { route: 'POST /responses', status: '200', model: 'test/model', provider: 'alpha' }
    const before = await scrape(gateway)
    expect(before.status).toBe(200)
    expect(before.contentType).toContain('text/plain')
    const n = 7
    for (let index = 0; index < n; index++) expect((await gateway.responses({ input: 'hi' })).status).toBe(200)
    const after = await scrape(gateway)
    expect(sample(after.text, 'modelgate_requests_total', labels) - sample(before.text, 'modelgate_requests_total', labels)).toBe(n)
    expect(sample(after.text, 'modelgate_request_duration_seconds_count', { route: 'POST /responses' })).toBe(n)
    expect(sample(after.text, 'modelgate_tokens_total', { direction: 'input', provider: 'alpha' })).toBe(5 * n)
    expect(sample(after.text, 'modelgate_tokens_total', { direction: 'output', provider: 'alpha' })).toBe(3 * n)
    expect(sample(after.text, 'modelgate_cost_usd_total', { provider: 'alpha' })).toBeGreaterThan(0)
    expect(sample(after.text, 'modelgate_upstream_attempts_total', { provider: 'alpha', outcome: 'answered' })).toBe(n)
    expect(sample(after.text, 'modelgate_store_call_duration_seconds_count')).toBeGreaterThan(0)
    expect(after.text).toContain('modelgate_event_loop_delay_seconds{quantile="0.99"}')
    // Bounded labels: no request id, no key, no key hash.
    expect(after.text).not.toContain(gateway.regularKey)
    expect(after.text).not.toContain(gateway.regularKeyHash.slice(0, 8))
    expect(after.text).not.toMatch(/request_?id/i)
  })

  it('counts other routes by their pattern, and unmatched paths as one route', async () => {
    const gateway = await start({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } })
    await gateway.call('GET', '/keys')
    await gateway.call('GET', '/no/such/route/1')
    await gateway.call('GET', '/no/such/route/2')
    const { text } = await scrape(gateway)
    expect(sample(text, 'modelgate_requests_total', { route: 'GET /keys', status: '200' })).toBe(1)
    expect(sample(text, 'modelgate_requests_total', { route: 'unmatched', status: '404' })).toBe(2)
    expect(text).not.toContain('/no/such/route')
  })

  it('counts a fallback, its failed attempt and the answer, and the time to first token of a stream', async () => {
    const gateway = await start({
      providers: { alpha: scriptedProvider({ reply: [{ type: 'http_error', status: 503 }] }), beta: scriptedProvider({ reply: 'From beta' }) },
      outlierDetection: { consecutiveFailures: 2 },
    })
    expect((await gateway.responses({ input: 'hi' })).status).toBe(200)
    const streamed = await gateway.responses({ input: 'hi', stream: true })
    await streamed.text()
    const { text } = await scrape(gateway)
    expect(sample(text, 'modelgate_fallbacks_total', { provider: 'alpha' })).toBe(2)
    expect(sample(text, 'modelgate_upstream_attempts_total', { provider: 'alpha', outcome: 'failed' })).toBe(2)
    expect(sample(text, 'modelgate_upstream_attempts_total', { provider: 'beta', outcome: 'answered' })).toBe(2)
    expect(sample(text, 'modelgate_outlier_ejections_total', { kind: 'endpoint', provider: 'alpha' })).toBe(1)
    expect(sample(text, 'modelgate_requests_total', { provider: 'beta', status: '200' })).toBe(2)
    expect(sample(text, 'modelgate_time_to_first_token_seconds_count', { provider: 'beta' })).toBe(1)
    expect(sample(text, 'modelgate_active_streams')).toBe(0)
  })

  it('counts spend-limit refusals by limit', async () => {
    const gateway = await start({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } })
    const limited = await gateway.call('POST', '/keys', { json: { name: 'limited', limit: 0.000001 } })
    const { key } = (await limited.json()) as { key: string }
    const refused = await gateway.call('POST', '/responses', { key, json: { input: 'hi', max_output_tokens: 1000 } })
    expect(refused.status).toBe(402)
    const { text } = await scrape(gateway)
    expect(sample(text, 'modelgate_spend_limit_refusals_total', { limit: 'key' })).toBe(1)
    expect(sample(text, 'modelgate_requests_total', { route: 'POST /responses', status: '402' })).toBe(1)
  })

  it('answers management keys only, unless the operator made the metrics public', async () => {
    const gateway = await start({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } })
    expect((await scrape(gateway, null)).status).toBe(401)
    expect((await scrape(gateway, gateway.regularKey)).status).toBe(403)
    expect((await scrape(gateway, gateway.managementKey)).status).toBe(200)
    const post = await gateway.gateway.fetch(new Request(`${TEST_ORIGIN}/metrics`, { method: 'POST', headers: { authorization: `Bearer ${gateway.managementKey}` } }))
    expect(post.status).toBe(405)

    const open = await start({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } }, { isPublic: true })
    expect((await scrape(open, null)).status).toBe(200)
  })

  it('serves only through gateway.metrics when its path is false, and refuses a path inside the base path', async () => {
    const gateway = await start({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } }, { path: false })
    expect((await scrape(gateway)).status).toBe(404)
    const handled = await gateway.gateway.metrics(new Request('http://elsewhere.test/', { headers: { authorization: `Bearer ${gateway.managementKey}` } }))
    expect(handled.status).toBe(200)
    expect(await handled.text()).toContain('modelgate_requests_total')
    await expect(start({}, { path: '/api/v1/metrics' })).rejects.toThrow(/outside the API's base path/)
  })

  it('keeps two gateways in one process apart', async () => {
    const first = await start({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } })
    const second = await start({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } })
    await first.responses({ input: 'hi' })
    await first.responses({ input: 'hi' })
    await second.responses({ input: 'hi' })
    expect(sample((await scrape(first)).text, 'modelgate_requests_total', { route: 'POST /responses' })).toBe(2)
    expect(sample((await scrape(second)).text, 'modelgate_requests_total', { route: 'POST /responses' })).toBe(1)
  })
})
