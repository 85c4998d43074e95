/**
 * No tenant can stall the gateway: starts the built runner (`dist/cli.js serve`, run `npm run build` first) with a
 * loopback OpenAI upstream, runs the hostile inputs a tenant could send while another client polls `/health` every
 * 50 ms, and prints the worst `/health` latency, each attack's status and time, and the runner's peak RSS.
 *
 *   node --import tsx bench/isolation.ts
 *
 * Loopback only; every request is bounded (60 s), the whole run takes a few minutes. A measurement, not a test:
 * the targets (health within 250 ms, each attack answered within 30 s, under 500 MB) are printed beside the figures.
 */

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pdfBomb, pdfDataUrl } from '../test/helpers/pdf'
import { startListening, type RunningProcess } from '../test/helpers/process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

const CLI = resolve(import.meta.dirname, '../dist/cli.js')
const MANAGEMENT_KEY = 'isolation-bench-management-key-0123456789'
const MiB = 1024 * 1024
const REQUEST_TIMEOUT_MS = 60_000

interface Attack {
  name: string
  body: Record<string, unknown>
  /** Sent this many times at once. */
  copies?: number
}

/** A loopback OpenAI that answers every request with the recorded Responses answer. */
const startUpstream = async () => {
  const answer = await readFile(resolve(import.meta.dirname, '../test/fixtures/providers/openai/text.json'))
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end(answer))
  })
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  }
}

const post = async (url: string, path: string, key: string, body: unknown) => {
  const response = await fetch(`${url}/api/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  })
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() }
}

/** Polls `/health` every 50 ms until stopped; keeps the worst latency. */
const pollHealth = (url: string) => {
  let worst = 0
  let polls = 0
  let failures = 0
  let isRunning = true
  const loop = (async () => {
    while (isRunning) {
      const started = performance.now()
      try {
        const response = await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(10_000) })
        await response.arrayBuffer()
        if (response.status !== 200) failures++
      } catch {
        failures++
      }
      const took = performance.now() - started
      worst = Math.max(worst, took)
      polls++
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 50 - took)))
    }
  })()
  return {
    reset: () => {
      const figures = { worst, polls, failures }
      worst = 0
      polls = 0
      failures = 0
      return figures
    },
    stop: async () => {
      isRunning = false
      await loop
    },
  }
}

/** Peak resident set of a process, threads included (Linux: VmHWM). */
const peakRss = async (pid: number): Promise<number | undefined> => {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    const kilobytes = /VmHWM:\s+(\d+) kB/.exec(status)?.[1]
    return kilobytes ? Number(kilobytes) * 1024 : undefined
  } catch {
    return undefined
  }
}

const summarize = (text: string) => {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } }
    if (parsed.error?.message) return parsed.error.message.slice(0, 160)
  } catch {
    // not JSON
  }
  return `${text.length} bytes`
}

const runAttack = async (server: RunningProcess, key: string, attack: Attack, health: ReturnType<typeof pollHealth>) => {
  health.reset()
  const started = performance.now()
  const answers = await Promise.all(
    Array.from({ length: attack.copies ?? 1 }, () =>
      post(server.url, '/responses', key, attack.body).catch((error: unknown) => ({ status: 0, retryAfter: null, body: String(error) })),
    ),
  )
  const seconds = (performance.now() - started) / 1000
  const { worst, polls, failures } = health.reset()
  const statuses = answers.map((answer) => answer.status + (answer.retryAfter ? ` (Retry-After ${answer.retryAfter})` : ''))
  console.log(`\n${attack.name}`)
  console.log(`  status: ${statuses.join(', ')} in ${seconds.toFixed(2)} s`)
  for (const message of new Set(answers.map((answer) => summarize(answer.body)))) console.log(`  answer: ${message}`)
  console.log(`  /health during it: worst ${worst.toFixed(0)} ms over ${polls} polls${failures ? `, ${failures} failed` : ''}`)
  return { name: attack.name, seconds, worst, failures }
}

const startRunner = async (dataDir: string, upstreamUrl: string, settings: Record<string, unknown>) => {
  const configPath = join(dataDir, `modelgate-${Date.now()}.json`)
  await writeFile(configPath, JSON.stringify({ storage: 'memory', providers: { openai: { baseURL: upstreamUrl, apiKey: 'sk-isolation-bench-0123456789abcdef' } }, ...settings }))
  return startListening('node', [CLI, 'serve'], {
    env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_HOST: '127.0.0.1', MODELGATE_LOG_LEVEL: 'warn', MODELGATE_CONFIG: configPath, MODELGATE_MANAGEMENT_KEY: MANAGEMENT_KEY },
  })
}

/** A key governed by a guardrail whose one operator pattern has empty matches. */
const guardedKey = async (server: RunningProcess) => {
  const guardrail = await post(server.url, '/guardrails', MANAGEMENT_KEY, { name: 'Empty matches', content_filters: [{ pattern: '(?:a*b)?', action: 'redact', label: '[AB]' }] })
  const id = (JSON.parse(guardrail.body) as { data: { id: string } }).data.id
  const created = await post(server.url, '/keys', MANAGEMENT_KEY, { name: 'tenant' })
  const { key, data } = JSON.parse(created.body) as { key: string; data: { hash: string } }
  await post(server.url, `/guardrails/${id}/assignments/keys`, MANAGEMENT_KEY, { key_hashes: [data.hash] })
  return key
}

const withPdf = (pdf: Uint8Array) => ({
  model: 'openai/gpt-4.1',
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'Summarise' }, { type: 'input_file', filename: 'bomb.pdf', file_data: pdfDataUrl(pdf) }] }],
  plugins: [{ id: 'file-parser' }],
})

const main = async () => {
  const upstream = await startUpstream()
  const dataDir = await mkdtemp(join(tmpdir(), 'modelgate-isolation-'))
  const results: Array<{ name: string; seconds: number; worst: number; failures: number }> = []
  const peaks: number[] = []
  const bomb = pdfBomb(64 * MiB, 1)
  const bombOf20 = pdfBomb(64 * MiB, 20)
  console.log(`PDF bomb: ${(bombOf20.length / 1024).toFixed(0)} KB sent, one content stream inflating to 64 MiB`)
  const phases: Array<{ title: string; settings: Record<string, unknown>; attacks: (key: string) => Attack[] }> = [
    {
      title: 'defaults',
      settings: {},
      attacks: () => [
        { name: 'guardrail (?:a*b)? on 16,384 × "a"', body: { model: 'openai/gpt-4.1', input: 'a'.repeat(16_384) } },
        { name: 'guardrail (?:a*b)? on 1,000,000 × "a" (under the scan limit)', body: { model: 'openai/gpt-4.1', input: 'a'.repeat(1_000_000) } },
        { name: 'guardrail on 2,000,000 characters (over the scan limit)', body: { model: 'openai/gpt-4.1', input: 'a'.repeat(2_000_000) } },
        { name: 'PDF bomb, 1 page (file-parser)', body: withPdf(bomb) },
        { name: 'PDF bomb, 20 pages sharing the stream (file-parser)', body: withPdf(bombOf20) },
        { name: '6 PDF bombs of 20 pages at once', body: withPdf(bombOf20), copies: 6 },
      ],
    },
    {
      // The inflated-size cap raised past the bomb, so pdf.js itself grinds on it: the worker's heap or time limit ends it.
      title: 'maxDecompressedBytes raised to 128 MiB (the bomb reaches pdf.js)',
      settings: { plugins: { fileParser: { maxDecompressedBytes: 128 * MiB } } },
      attacks: () => [
        { name: 'PDF bomb, 1 page, read by pdf.js until a limit', body: withPdf(bomb) },
        { name: 'PDF bomb, 20 pages, read by pdf.js until a limit', body: withPdf(bombOf20) },
      ],
    },
  ]
  try {
    for (const phase of phases) {
      console.log(`\n=== runner with ${phase.title} ===`)
      const server = await startRunner(dataDir, upstream.url, phase.settings)
      const health = pollHealth(server.url)
      try {
        const key = await guardedKey(server)
        for (const attack of phase.attacks(key)) results.push(await runAttack(server, key, attack, health))
        const peak = await peakRss(server.child.pid!)
        if (peak) peaks.push(peak)
        console.log(`\n  runner peak RSS: ${peak ? `${(peak / MiB).toFixed(0)} MB` : 'unknown (no /proc)'}`)
        const warnings = server.stderr().split('\n').filter((line) => line.includes('event loop stalled'))
        console.log(`  event-loop warnings logged: ${warnings.length}`)
        for (const line of warnings) console.log(`    ${line.slice(0, 300)}`)
      } finally {
        await health.stop()
        await server.stop('SIGTERM')
      }
    }
  } finally {
    await upstream.close()
    await rm(dataDir, { recursive: true, force: true })
  }
  const worstHealth = Math.max(...results.map((result) => result.worst))
  const slowest = Math.max(...results.map((result) => result.seconds))
  const peak = Math.max(...peaks)
  console.log('\n=== summary ===')
  console.log(`worst /health latency: ${worstHealth.toFixed(0)} ms (target 250 ms)`)
  console.log(`slowest attack answered in: ${slowest.toFixed(2)} s (target 30 s)`)
  console.log(`runner peak RSS: ${(peak / MiB).toFixed(0)} MB (target 500 MB)`)
}

await main()
