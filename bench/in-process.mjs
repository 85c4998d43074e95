// @ts-check
/**
 * In-process A/B of two builds (bench/README.md, "What changed"): both gateways live in this one process, with
 * memory storage and a fake transport that answers the bench's fixtures (a stream one SSE event per event-loop
 * turn), and take turns in batches of 16 concurrent requests, so a drift of the machine hits both alike. No
 * sockets: what is compared is the gateway's own CPU per request, batch by batch, and what it asks of its store.
 *
 *   node bench/in-process.mjs <build A> <build B> [json|stream|json-chat|stream-chat] [batches]
 *
 * `INPROCESS_B_LEDGER=off` runs B with the usage ledger off (give the same build twice to see the ledger's cost);
 * `INPROCESS_B_TELEMETRY=traces` runs B with tracing on, through an OpenTelemetry SDK whose batch processor hands every
 * span to an exporter that drops it (what making and ending the spans costs, without a network); `metrics` runs B with
 * the Prometheus exporter of `modelgate/metrics` observing it (give the same build twice to see either's cost);
 * `INPROCESS_EXTRA_DELTAS=N` streams N more text deltas per answer (a long stream shows the cost per event).
 *
 * A build is a dist/ folder (`npm run build`, or the tsup config built elsewhere). Prints CPU per request of each,
 * B ÷ A over all batches and the median of the per-batch ratios, store calls and spend counters per request.
 */

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const [dirA, dirB, mode = 'json', batchesArgument = '300'] = process.argv.slice(2)
if (!dirA || !dirB || !['json', 'stream', 'json-chat', 'stream-chat'].includes(mode)) {
  throw new Error('usage: node bench/in-process.mjs <build A> <build B> [json|stream|json-chat|stream-chat] [batches]')
}
const BATCHES = Number(batchesArgument)
const CONCURRENCY = 16
const WARM_UP_BATCHES = 60
const UPSTREAM_KEY = 'sk-bench-0123456789abcdef'

const FIXTURES = fileURLToPath(new URL('../test/fixtures/providers/', import.meta.url))
/** @param {string} wire @param {string} file */
const fixture = (wire, file) => readFileSync(join(FIXTURES, wire, file), 'utf8')
const encoder = new TextEncoder()
/** @param {string} text */
const EXTRA_DELTAS = Number(process.env.INPROCESS_EXTRA_DELTAS ?? 0)
/** The fixture's events, its first text delta repeated `EXTRA_DELTAS` more times. @param {string} text */
const sseEvents = (text) => {
  const events = text.split(/(?<=\n\n)/).filter((part) => part.length > 0)
  const deltaAt = events.findIndex((part) => part.includes('"response.output_text.delta"') || part.includes('"delta":{"content"'))
  if (EXTRA_DELTAS > 0 && deltaAt >= 0) events.splice(deltaAt, 0, ...Array.from({ length: EXTRA_DELTAS }, () => /** @type {string} */ (events[deltaAt])))
  return events.map((part) => encoder.encode(part))
}
const ANSWERS = {
  responses: { json: fixture('openai', 'text.json'), events: sseEvents(fixture('openai', 'text.sse')) },
  chat: { json: fixture('openai-chat', 'text.json'), events: sseEvents(fixture('openai-chat', 'text.sse')) },
}
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/**
 * The upstream: the fixture of the wire the URL names, whole or one event per turn.
 * @param {{ url: string, body: string }} request
 */
const fakeTransport = async (request) => {
  const answer = ANSWERS[request.url.endsWith('/chat/completions') ? 'chat' : 'responses']
  const isStream = JSON.parse(request.body).stream === true
  const headers = new Headers({ 'content-type': isStream ? 'text/event-stream' : 'application/json' })
  if (!isStream) {
    const bytes = encoder.encode(answer.json)
    return { status: 200, headers, body: (async function* () { yield bytes })(), text: async () => answer.json, cancel: async () => {} }
  }
  let isCancelled = false
  const body = (async function* () {
    for (const event of answer.events) {
      if (isCancelled) return
      await nextTurn()
      yield event
    }
  })()
  return { status: 200, headers, body, cancel: async () => void (isCancelled = true) }
}

/**
 * The store, counting calls and the spend counters they carry.
 * @param {Record<string, unknown>} driver
 */
const counted = (driver) => {
  const counts = { calls: 0, counters: 0 }
  const proxy = new Proxy(driver, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (typeof value !== 'function' || name === 'close') return value
      return (/** @type {unknown[]} */ ...args) => {
        counts.calls++
        if (name === 'increment') counts.counters++
        if (name === 'incrementMany') counts.counters += /** @type {unknown[]} */ (args[0]).length
        // Spend moves by holds and settlements of tallies: each change is a spend counter written.
        if (name === 'hold') counts.counters += /** @type {{ changes: unknown[] }} */ (args[0]).changes.length
        if (name === 'settle') {
          for (const settlement of /** @type {Array<{ changes: unknown[] }>} */ (args[0])) counts.counters += settlement.changes.length
        }
        return value.apply(target, args)
      }
    },
  })
  return { proxy, counts }
}

/** B's telemetry (`INPROCESS_B_TELEMETRY`): traces into a discarding SDK exporter, or the Prometheus metrics. @param {string} dir @param {string | undefined} kind */
const telemetryOptions = async (dir, kind) => {
  if (kind === 'traces') {
    const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base')
    /** @type {import('@opentelemetry/sdk-trace-base').SpanExporter} */
    const discard = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} }
    return { tracing: { tracerProvider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] }) } }
  }
  if (kind === 'metrics') {
    const { createPrometheusMetrics } = await import(pathToFileURL(join(dir, 'metrics.js')).href)
    return { metrics: { exporter: createPrometheusMetrics() } }
  }
  if (kind !== undefined) throw new Error(`INPROCESS_B_TELEMETRY must be traces or metrics, not ${kind}`)
  return {}
}

/** @param {string} dir @param {boolean} [isLedgerOff] @param {string} [telemetry] */
const start = async (dir, isLedgerOff = false, telemetry = undefined) => {
  const { createGateway, memoryStorage } = await import(pathToFileURL(join(dir, 'index.js')).href)
  const store = counted(memoryStorage())
  const gateway = createGateway({
    storage: store.proxy,
    logger: false,
    ...(isLedgerOff ? { ledger: { enabled: false } } : {}),
    ...(await telemetryOptions(dir, telemetry)),
    transport: fakeTransport,
    providers: { openai: { baseURL: 'http://127.0.0.1:9/v1', apiKey: UPSTREAM_KEY }, groq: { baseURL: 'http://127.0.0.1:9/v1', apiKey: UPSTREAM_KEY } },
    // The bench's translated model (bench/gateway.mjs).
    models: [
      {
        slug: 'bench/chat-model',
        name: 'Bench model on a Chat Completions upstream',
        endpoints: [{ provider: 'groq', model: 'gpt-4.1-mini', contextLength: 1_047_576, pricing: { prompt: 0.4e-6, completion: 1.6e-6 } }],
      },
    ],
  })
  const { key } = await gateway.admin.createKey({ kind: 'regular', name: 'bench' })
  return { gateway, key, counts: store.counts }
}

const body = JSON.stringify({
  model: mode.endsWith('chat') ? 'bench/chat-model' : 'openai/gpt-4.1',
  input: 'What is the capital of France?',
  stream: mode.startsWith('stream'),
})

/** @typedef {Awaited<ReturnType<typeof start>>} Target */

/** One request, read to its end. @param {Target} target */
const call = async ({ gateway, key }) => {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` }
  const reply = await gateway.reply(new Request('http://127.0.0.1/api/v1/responses', { method: 'POST', headers, body }))
  if (reply.kind === 'json') {
    if (reply.status !== 200) throw new Error(`${reply.status}: ${reply.text}`)
    return
  }
  if (reply.kind !== 'events') throw new Error(`unexpected reply: ${reply.kind}`)
  await new Promise((resolve, reject) => reply.produce({ write: () => true, ready: async () => {}, close: resolve, fail: reject }))
}
/** @param {Target} target */
const batch = (target) => Promise.all(Array.from({ length: CONCURRENCY }, () => call(target)))
const cpuMicros = () => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

const targets = { A: await start(dirA), B: await start(dirB, process.env.INPROCESS_B_LEDGER === 'off', process.env.INPROCESS_B_TELEMETRY) }
for (let index = 0; index < WARM_UP_BATCHES; index++) {
  await batch(targets.A)
  await batch(targets.B)
}
const before = { A: { ...targets.A.counts }, B: { ...targets.B.counts } }
const spent = { A: 0, B: 0 }
/** @type {number[]} */
const ratios = []
for (let index = 0; index < BATCHES; index++) {
  // Alternate which goes first, so neither always runs on a cache the other warmed.
  /** @type {Array<'A' | 'B'>} */
  const order = index % 2 === 0 ? ['A', 'B'] : ['B', 'A']
  const took = { A: 0, B: 0 }
  for (const name of order) {
    const started = cpuMicros()
    await batch(targets[name])
    took[name] = cpuMicros() - started
    spent[name] += took[name]
  }
  ratios.push(took.B / took.A)
}
ratios.sort((left, right) => left - right)
const requests = BATCHES * CONCURRENCY
/** @param {'A' | 'B'} name @param {'calls' | 'counters'} field */
const perRequest = (name, field) => ((targets[name].counts[field] - before[name][field]) / requests).toFixed(2)
console.log(
  `${mode}: CPU / req A ${(spent.A / requests).toFixed(1)} µs, B ${(spent.B / requests).toFixed(1)} µs; B ÷ A ${(spent.B / spent.A).toFixed(3)} ` +
    `(median of batches ${ratios[Math.floor(BATCHES / 2)]?.toFixed(3)}); store calls / req A ${perRequest('A', 'calls')}, B ${perRequest('B', 'calls')}; ` +
    `spend counters / req A ${perRequest('A', 'counters')}, B ${perRequest('B', 'counters')}`,
)
await targets.A.gateway.close()
await targets.B.gateway.close()
