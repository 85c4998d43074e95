/**
 * The runner's SQLite store under a month of usage records: writes `SQLITE_BENCH_RECORDS` generation records (default
 * 1 000 000) through the usage ledger's repository in batches of 100, as the ledger writes them, printing the heap as it
 * goes; then opens the file again in a fresh driver and times the open, one record read by id, and a page of one
 * account's day. Run by hand (it writes about 1.5 GB at the default count):
 *
 *   node --expose-gc --import tsx bench/sqlite-store.ts [directory]
 *
 * The store's records live in the file, so the heap should stay flat however many there are.
 */
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createGenerationsRepository, type GenerationRecord } from '../src/repositories/generations'
import { openSqliteStorage } from '../src/storage/sqlite'

const RECORDS = Number(process.env.SQLITE_BENCH_RECORDS ?? 1_000_000)
const BATCH = 100
const ACCOUNTS = 20
const MEGABYTE = 1024 * 1024
const START = Date.UTC(2025, 0, 1)
/** One request a second, as the figures in docs/decisions.md assume. */
const SPACING_MS = 1_000

const record = (index: number): GenerationRecord => {
  const accountId = `account-${index % ACCOUNTS}`
  return {
    id: `gen-${randomUUID()}`,
    createdAt: new Date(START + index * SPACING_MS).toISOString(),
    requestId: randomUUID(),
    accountId,
    workspaceId: `${accountId}-workspace`,
    keyHash: 'a'.repeat(64),
    userId: 'user-1',
    api: 'chat_completions',
    requestedModel: 'openai/gpt-4.1-mini',
    model: 'openai/gpt-4.1-mini',
    provider: 'openai',
    endpoint: 'gpt-4.1-mini-2025-04-14',
    isByok: false,
    isStreamed: true,
    status: 'completed',
    httpStatus: 200,
    errorType: null,
    finishReason: 'stop',
    nativeFinishReason: 'completed',
    tokens: { input: 1_234, output: 567, cached: 0, reasoning: 0 },
    isUsageEstimated: false,
    cost: 0.000_123_4,
    upstreamCost: null,
    byokFee: 0,
    latencyMs: 812,
    timeToFirstTokenMs: 211,
    generationTimeMs: 601,
    attempts: [{ provider: 'openai', model: 'openai/gpt-4.1-mini', endpoint: 'gpt-4.1-mini-2025-04-14', isByok: false, status: 200, latencyMs: 800 }],
    endUser: null,
    session: null,
    trace: null,
    presetId: null,
    routing: { requested: 'openai/gpt-4.1-mini', strategy: 'direct', attempts: 1, endpointsPlanned: 3, region: 'us' },
  }
}

const heapMB = () => {
  globalThis.gc?.()
  return process.memoryUsage().heapUsed / MEGABYTE
}

const main = async () => {
  const directory = process.argv[2] ?? (await mkdtemp(join(tmpdir(), 'modelgate-sqlite-bench-')))
  const path = join(directory, 'modelgate.db')
  const isScratch = process.argv[2] === undefined
  try {
    const storage = await openSqliteStorage({ path })
    const generations = createGenerationsRepository(storage)
    const heapAtStart = heapMB()
    let maxHeap = heapAtStart
    const started = performance.now()
    let last: GenerationRecord | undefined
    for (let written = 0; written < RECORDS; written += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, RECORDS - written) }, (_, offset) => record(written + offset))
      last = batch.at(-1)
      await generations.store(batch)
      if ((written + BATCH) % 100_000 === 0) {
        const heap = heapMB()
        maxHeap = Math.max(maxHeap, heap)
        console.log(`${written + BATCH} records: heap ${heap.toFixed(1)} MB, ${((performance.now() - started) / 1000).toFixed(1)} s`)
      }
    }
    const writeSeconds = (performance.now() - started) / 1000
    const heapAtEnd = heapMB()
    await storage.close()
    const bytes = (await stat(path)).size
    console.log(
      `wrote ${RECORDS} records in ${writeSeconds.toFixed(1)} s (${((writeSeconds * 1e6) / RECORDS).toFixed(1)} µs each); ` +
        `heap ${heapAtStart.toFixed(1)} → ${heapAtEnd.toFixed(1)} MB (max ${maxHeap.toFixed(1)}), ` +
        `${(((heapAtEnd - heapAtStart) * MEGABYTE) / RECORDS).toFixed(2)} bytes per record; file ${(bytes / MEGABYTE).toFixed(0)} MB`,
    )

    const openStarted = performance.now()
    const reopened = await openSqliteStorage({ path })
    const openMs = performance.now() - openStarted
    const repository = createGenerationsRepository(reopened)
    const readStarted = performance.now()
    const found = await repository.get(last!.id)
    const readMs = performance.now() - readStarted
    if (found?.id !== last!.id) throw new Error('the last record written is not there')
    const pageStarted = performance.now()
    const day = last!.createdAt.slice(0, 10)
    let dayRecords = 0
    for await (const _ of repository.list(last!.accountId, day)) dayRecords++
    const dayMs = performance.now() - pageStarted
    const sweepStarted = performance.now()
    // The retention sweep's first step: the oldest page, with the collection's count.
    const oldest = await reopened.list('generations', { limit: 200 })
    const sweepMs = performance.now() - sweepStarted
    console.log(
      `reopened in ${openMs.toFixed(1)} ms; one record by id in ${readMs.toFixed(1)} ms; ` +
        `one account's day (${dayRecords} records, pages of 500) in ${dayMs.toFixed(1)} ms; ` +
        `the oldest 200 of ${oldest.totalCount} in ${sweepMs.toFixed(1)} ms; heap ${heapMB().toFixed(1)} MB`,
    )
    await reopened.close()
  } finally {
    if (isScratch) await rm(directory, { recursive: true, force: true })
  }
}

await main()
