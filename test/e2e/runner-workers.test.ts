/**
 * `modelgate serve --workers N`: worker processes on one port and one shared store (PostgreSQL here), one
 * first-run banner and key, limits counted across workers, a dead worker replaced, and a clean stop of all.
 */

import http from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { runToEnd, startListening, stopAndDrain, type RunningProcess } from '../helpers/process'
import { POSTGRES_URL, dropPostgresSchema, requireServer, uniqueNamespace } from '../helpers/stores'

const CLI = resolve(__dirname, '../../dist/cli.js')
const MINTED = /^ {4}(mg-v1-[0-9a-f]{64})$/m
/** More than enough requests for round-robin over 2 workers to reach both; bounded, so a broken spread fails. */
const MAX_PROBES = 20

/** One request on a connection of its own (no keep-alive), so each one can reach another worker. */
const request = (url: string, options: { method?: string; key?: string; body?: unknown } = {}) =>
  new Promise<{ status: number; json: any }>((resolvePromise, reject) => {
    const headers: Record<string, string> = { ...(options.key ? { authorization: `Bearer ${options.key}` } : {}), ...(options.body ? { 'content-type': 'application/json' } : {}) }
    const outgoing = http.request(url, { method: options.method ?? 'GET', agent: false, headers }, (response) => {
      let text = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolvePromise({ status: response.statusCode!, json: text ? JSON.parse(text) : undefined }))
    })
    outgoing.on('error', reject)
    outgoing.end(options.body === undefined ? undefined : JSON.stringify(options.body))
  })

/** Whether a process of that pid runs (an exited child of another process may linger as a zombie until reaped). */
const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const logEntries = (stderr: string) =>
  stderr
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

/** The workers that answered `/health`, one new connection each, until `count` distinct ones did (bounded). */
const workersAnswering = async (url: string, count: number) => {
  const seen = new Set<number>()
  for (let probe = 0; probe < MAX_PROBES && seen.size < count; probe++) {
    const { status, json } = await request(`${url}/api/v1/health`)
    expect(status).toBe(200)
    seen.add(json.worker)
  }
  return seen
}

describe('modelgate serve --workers', () => {
  let dataDir: string
  const running: RunningProcess[] = []
  const schemas: string[] = []

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'modelgate-workers-'))
  })
  afterEach(async () => {
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')))
    await Promise.all(schemas.splice(0).map((schema) => dropPostgresSchema(schema)))
    await rm(dataDir, { recursive: true, force: true })
  })

  const serveOnPostgres = async (env: Record<string, string> = {}) => {
    await requireServer(5432)
    const schema = uniqueNamespace('workers')
    schemas.push(schema)
    const process = await startListening('node', [CLI, 'serve', '--workers', '2'], {
      env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_LOG_LEVEL: 'info', MODELGATE_STORAGE: POSTGRES_URL, MODELGATE_SQL_SCHEMA: schema, ...env },
      timeoutMs: 45_000,
    })
    running.push(process)
    return process
  }

  const workerPids = (process: RunningProcess) => logEntries(process.stderr()).find((entry) => entry.message === 'workers listening')!.pids as number[]

  it('serves from both workers, mints one first key shown once, counts a rate limit across workers and stops all on SIGTERM', async () => {
    const gateway = await serveOnPostgres({ MODELGATE_RATE_LIMIT_REQUESTS: '6' })
    await vi.waitFor(() => expect(gateway.stdout()).toContain('Lost it?'))
    expect(gateway.stdout().match(/modelgate listening on/g)).toHaveLength(1)
    expect(gateway.stdout()).toContain(`modelgate listening on ${gateway.url} with 2 workers`)
    expect(gateway.stdout().match(/this store had no management key/g)).toHaveLength(1)
    const key = MINTED.exec(gateway.stdout())![1]!
    expect(gateway.stderr()).not.toContain(key)

    expect([...(await workersAnswering(gateway.url, 2))].sort()).toEqual([1, 2])

    // One management key in the store, however many workers started on the empty store.
    const listed = await request(`${gateway.url}/api/v1/keys`, { key })
    expect(listed.status).toBe(200)
    expect(listed.json.data.filter((entry: { kind: string }) => entry.kind === 'management')).toHaveLength(1)

    // The limit is one counter in the store: 6 requests pass in all, not 6 per worker.
    const created = await request(`${gateway.url}/api/v1/keys`, { method: 'POST', key, body: { name: 'caller' } })
    expect(created.status).toBe(201)
    const statuses: number[] = []
    for (let index = 0; index < 10; index++) statuses.push((await request(`${gateway.url}/api/v1/key`, { key: created.json.key })).status)
    expect(statuses.filter((status) => status === 200)).toHaveLength(6)
    expect(statuses.filter((status) => status === 429)).toHaveLength(4)

    const pids = workerPids(gateway)
    expect(pids).toHaveLength(2)
    expect(await stopAndDrain(gateway, 'SIGTERM')).toBe(0)
    const entries = logEntries(gateway.stderr())
    expect(entries.filter((entry) => entry.message === 'stopped' && entry.worker !== undefined).map((entry) => entry.worker).sort()).toEqual([1, 2])
    expect(entries.at(-1)).toMatchObject({ message: 'stopped' })
    expect(entries.some((entry) => entry.message === 'a worker exited unexpectedly; starting another')).toBe(false)
    for (const pid of pids) expect(isRunning(pid)).toBe(false)
  })

  it('answers a metrics scrape for every worker, whichever worker the scrape reaches', async () => {
    const operator = 'operator-key-metrics-0123456789abcdef'
    const gateway = await serveOnPostgres({ MODELGATE_MANAGEMENT_KEY: operator, MODELGATE_DEMO_MODELS: '1' })
    const created = await request(`${gateway.url}/api/v1/keys`, { method: 'POST', key: operator, body: { name: 'traffic' } })
    expect(created.status).toBe(201)
    // One connection each, so round robin spreads them over both workers.
    const n = 8
    for (let index = 0; index < n; index++) {
      const answered = await request(`${gateway.url}/api/v1/responses`, { method: 'POST', key: created.json.key, body: { model: 'demo/chat', input: 'hello' } })
      expect(answered.status).toBe(200)
    }
    const scrape = () =>
      new Promise<string>((resolvePromise, reject) => {
        const outgoing = http.request(`${gateway.url}/metrics`, { agent: false, headers: { authorization: `Bearer ${operator}` } }, (response) => {
          let text = ''
          response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
          response.on('end', () => resolvePromise(text))
        })
        outgoing.on('error', reject).end()
      })
    const answeredLines = (text: string) =>
      text.split('\n').filter((line) => line.startsWith('modelgate_requests_total{') && line.includes('route="POST /responses"') && line.includes('status="200"'))
    // Two scrapes on new connections reach both workers in turn; each counts all N requests, by worker.
    for (const text of [await scrape(), await scrape()]) {
      const lines = answeredLines(text)
      expect(lines.reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0)).toBe(n)
      expect(new Set(lines.map((line) => /worker="(\d+)"/.exec(line)?.[1])).size).toBe(2)
    }
  })

  it('replaces a worker that dies, and still stops cleanly', async () => {
    const gateway = await serveOnPostgres({ MODELGATE_MANAGEMENT_KEY: 'operator-key-0123456789abcdef' })
    const [victim, survivor] = workerPids(gateway)
    process.kill(victim!, 'SIGKILL')
    // The replacement takes the next cluster id: 3.
    await vi.waitFor(() => expect(logEntries(gateway.stderr()).some((entry) => entry.message === 'replacement worker listening')).toBe(true), { timeout: 30_000, interval: 100 })
    expect(logEntries(gateway.stderr()).find((entry) => entry.message === 'a worker exited unexpectedly; starting another')).toMatchObject({
      worker: 1,
      pid: victim,
      signal: 'SIGKILL',
      restartsInARow: 1,
    })
    expect([...(await workersAnswering(gateway.url, 2))].sort()).toEqual([2, 3])
    expect(isRunning(survivor!)).toBe(true)
    expect(await stopAndDrain(gateway, 'SIGTERM')).toBe(0)
    // The replacement was a worker like the others: no second start-up report and no key minted.
    expect(gateway.stdout()).not.toContain('mg-v1-')
    expect(logEntries(gateway.stderr()).filter((entry) => entry.message === 'modelgate listening')).toHaveLength(1)
  })

  it('forwards SIGHUP to every worker, each of which reloads its prices', async () => {
    const pricesPath = join(dataDir, 'prices.json')
    await writeFile(pricesPath, JSON.stringify({ prices: [{ model: 'anthropic/claude-sonnet-4.5', pricing: { prompt: 0.000001 } }] }))
    const gateway = await serveOnPostgres({ MODELGATE_MANAGEMENT_KEY: 'operator-key-0123456789abcdef', MODELGATE_PRICE_SOURCE: pricesPath })
    const reloadsBy = () => logEntries(gateway.stderr()).filter((entry) => entry.message === 'prices refreshed').map((entry) => entry.worker)
    // Each worker loaded the file before it listened.
    expect(reloadsBy().sort()).toEqual([1, 2])
    gateway.child.kill('SIGHUP')
    await vi.waitFor(() => expect(reloadsBy()).toHaveLength(4), { timeout: 15_000, interval: 50 })
    expect(reloadsBy().slice(2).sort()).toEqual([1, 2])
    // A reload, not a stop.
    expect(gateway.child.exitCode).toBeNull()
    expect(await stopAndDrain(gateway, 'SIGTERM')).toBe(0)
  })

  it('refuses more than one worker on a store one process only may open, naming the setting and what to use', async () => {
    const memory = await runToEnd('node', [CLI, 'serve', '--workers', '2', '--memory'], { env: { MODELGATE_PORT: '0', MODELGATE_DATA_DIR: dataDir } })
    expect(memory.code).toBe(1)
    expect(memory.stderr).toContain(
      'modelgate: MODELGATE_WORKERS=2 (--workers 2) needs a store several processes can share, and the memory store lives in the memory of one process: ' +
        'use the embedded SQLite store (MODELGATE_STORAGE=sqlite, the default), PostgreSQL or MySQL/MariaDB (postgres://… or mysql://…) or Redis (redis://…), or run one worker',
    )
    expect(memory.stdout).not.toContain('modelgate listening')

    const fromEnvironment = await runToEnd('node', [CLI, 'serve'], { env: { MODELGATE_PORT: '0', MODELGATE_STORAGE: 'memory', MODELGATE_WORKERS: '3' } })
    expect(fromEnvironment.code).toBe(1)
    expect(fromEnvironment.stderr).toContain('modelgate: MODELGATE_WORKERS=3 (--workers 3) needs a store several processes can share, and the memory store')
  })
})
