/**
 * The runner's Prometheus metrics: GET /metrics beside the API (outside its base path) for management keys, public
 * when the operator says so, or on a port of their own; a scrape before and after N requests moves
 * modelgate_requests_total by exactly N. Spawns the built runner (`npm run build` first).
 */

import { afterEach, describe, expect, it } from 'vitest'
import { startRunner, type RunningProcess } from '../helpers/process'

const OPERATOR_KEY = 'operator-key-metrics-0123456789'

const running: RunningProcess[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')))
})

const serve = async (env: Record<string, string> = {}) => {
  const process = await startRunner({ MODELGATE_STORAGE: 'memory', MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, MODELGATE_DEMO_MODELS: '1', MODELGATE_LOG_LEVEL: 'warn', ...env })
  running.push(process)
  return process
}

const requestsTotal = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('modelgate_requests_total{') && line.includes('route="POST /responses"') && line.includes('status="200"'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0)

describe('the runner serves Prometheus metrics', () => {
  it('at /metrics for management keys, counting each request once', async () => {
    const runner = await serve()
    const created = await fetch(`${runner.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'traffic' }),
    })
    const { key } = (await created.json()) as { key: string }
    const scrape = () => fetch(`${runner.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } })

    expect((await fetch(`${runner.url}/metrics`)).status).toBe(401)
    expect((await fetch(`${runner.url}/metrics`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(403)
    const before = await scrape()
    expect(before.status).toBe(200)
    expect(before.headers.get('content-type')).toContain('text/plain; version=0.0.4')
    const n = 3
    for (let index = 0; index < n; index++) {
      const answered = await fetch(`${runner.url}/api/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo/chat', input: 'hello' }),
      })
      expect(answered.status).toBe(200)
      await answered.text()
    }
    const after = await (await scrape()).text()
    expect(requestsTotal(after) - requestsTotal(await before.text())).toBe(n)
    expect(after).toContain('modelgate_event_loop_delay_seconds')
  })

  it('to anyone when public, and not at all when off', async () => {
    const open = await serve({ MODELGATE_METRICS: 'public', MODELGATE_METRICS_PATH: '/ops/metrics' })
    expect((await fetch(`${open.url}/ops/metrics`)).status).toBe(200)
    expect((await fetch(`${open.url}/metrics`)).status).toBe(404)
    const off = await serve({ MODELGATE_METRICS: 'off' })
    expect((await fetch(`${off.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } })).status).toBe(404)
  })

  it('on a port of its own, without a key, and not on the API port', async () => {
    const runner = await serve({ MODELGATE_METRICS_PORT: '0', MODELGATE_LOG_LEVEL: 'info' })
    const line = runner
      .stderr()
      .split('\n')
      .find((entry) => entry.includes('"metrics"'))
    const metricsUrl = (JSON.parse(line!) as { metrics: string }).metrics
    expect(new URL(metricsUrl).port).not.toBe(new URL(runner.url).port)
    const scraped = await fetch(metricsUrl)
    expect(scraped.status).toBe(200)
    expect(await scraped.text()).toContain('modelgate_requests_total')
    expect((await fetch(`${runner.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } })).status).toBe(404)
  })
})
