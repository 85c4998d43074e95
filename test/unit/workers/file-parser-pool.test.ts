/**
 * The file parser's worker pool: PDFs read on another thread, each limit answered as the limit it is, and a full
 * pool shedding load. PDFs are built in the test (test/helpers/pdf.ts).
 */

import { threadId } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import type { PdfTextLimits } from '../../../src/features/plugins/pdf-text'
import { createFileParserPool, FILE_PARSER_RETRY_AFTER_SECONDS, type FileParserPool } from '../../../src/workers/file-parser-pool'
import { pdfBomb, textPdf } from '../../helpers/pdf'

const LIMITS: PdfTextLimits = { maxPages: 100, maxCharacters: 100_000, maxDecompressedBytes: 8 * 1024 * 1024, timeoutMs: 60_000 }
const SILENT_WORKER = new URL('../../fixtures/workers/silent-worker.mjs', import.meta.url)
const MiB = 1024 * 1024

let pool: FileParserPool | undefined
afterEach(async () => {
  await pool?.close()
  pool = undefined
})

const signal = () => new AbortController().signal

describe('file parser pool', () => {
  it('reads a PDF on a worker thread, not the gateway\'s', async () => {
    pool = createFileParserPool({ threads: 1 })
    const outcome = await pool.extract(textPdf(['Invoice 2024-117', 'Total due: 42 EUR'], 2), LIMITS, signal())
    expect(outcome).toEqual({ ok: true, pages: ['Invoice 2024-117\nTotal due: 42 EUR', 'Invoice 2024-117\nTotal due: 42 EUR'], threadId: expect.any(Number) })
    expect(outcome.threadId).not.toBe(threadId)
    expect(pool.stats()).toEqual({ threads: 1, busy: 0, queued: 0, completed: 1, refused: 0 })
  })

  it('refuses a PDF bomb by its inflated size, before pdf.js reads it', async () => {
    pool = createFileParserPool({ threads: 1 })
    const outcome = await pool.extract(pdfBomb(64 * MiB, 20), { ...LIMITS, maxDecompressedBytes: 4 * MiB }, signal())
    expect(outcome).toEqual({ ok: false, limit: 'decompressed_bytes', found: expect.any(Number), threadId: expect.any(Number) })
    const found = (outcome as { found: number }).found
    expect(found).toBeGreaterThan(4 * MiB)
    // Counting stops just past the limit, not at the 64 MiB the stream holds.
    expect(found).toBeLessThan(5 * MiB)
  })

  it('refuses a PDF with more text than the character limit', async () => {
    pool = createFileParserPool({ threads: 1 })
    const outcome = await pool.extract(pdfBomb(256 * 1024, 3), { ...LIMITS, maxCharacters: 50_000 }, signal())
    expect(outcome).toMatchObject({ ok: false, limit: 'characters' })
  })

  it('refuses a PDF with more pages than the page limit', async () => {
    pool = createFileParserPool({ threads: 1 })
    expect(await pool.extract(textPdf(['one'], 5), { ...LIMITS, maxPages: 4 }, signal())).toMatchObject({ ok: false, limit: 'pages', found: 5 })
  })

  it('stops a worker past the time limit, and the next PDF gets a fresh one', async () => {
    pool = createFileParserPool({ threads: 1, workerUrl: SILENT_WORKER })
    expect(await pool.extract(textPdf(['one']), { ...LIMITS, timeoutMs: 200 }, signal())).toEqual({ ok: false, limit: 'time' })
    expect(pool.stats()).toMatchObject({ threads: 0, busy: 0, completed: 1 })
  })

  it('a worker past its heap limit dies alone: the PDF is refused for memory', async () => {
    pool = createFileParserPool({ threads: 1, heapMb: 16 })
    const outcome = await pool.extract(pdfBomb(6 * MiB, 1), { ...LIMITS, maxCharacters: 100_000_000, maxDecompressedBytes: 64 * MiB }, signal())
    expect(outcome).toEqual({ ok: false, limit: 'memory', found: 16 })
    expect(pool.stats()).toMatchObject({ threads: 0, busy: 0 })
  }, 60_000)

  it('a full pool refuses at once past its queue, with 503 and Retry-After', async () => {
    pool = createFileParserPool({ threads: 1, maxQueued: 0, workerUrl: SILENT_WORKER })
    const first = pool.extract(textPdf(['one']), { ...LIMITS, timeoutMs: 30_000 }, signal())
    const refused = await pool.extract(textPdf(['two']), LIMITS, signal()).catch((error: unknown) => error)
    expect(refused).toMatchObject({ status: 503, headers: { 'retry-after': String(FILE_PARSER_RETRY_AFTER_SECONDS) } })
    expect((refused as Error).message).toBe(`The gateway's document readers are busy (1 document being read and 0 waiting); retry in ${FILE_PARSER_RETRY_AFTER_SECONDS} s`)
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 0, refused: 1 })
    await pool.close()
    await expect(first).rejects.toMatchObject({ status: 503 })
  })

  it('a queued PDF waits briefly, then is refused with 503', async () => {
    pool = createFileParserPool({ threads: 1, maxQueued: 1, queueTimeoutMs: 100, workerUrl: SILENT_WORKER })
    const first = pool.extract(textPdf(['one']), { ...LIMITS, timeoutMs: 30_000 }, signal()).catch((error: unknown) => error)
    const waiting = pool.extract(textPdf(['two']), LIMITS, signal())
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 1 })
    await expect(waiting).rejects.toMatchObject({ status: 503, message: `The gateway's document readers are busy (no worker was free within 0.1 s); retry in ${FILE_PARSER_RETRY_AFTER_SECONDS} s` })
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 0, refused: 1 })
    await pool.close()
    await first
  })

  it('a client that leaves frees the worker its PDF held', async () => {
    pool = createFileParserPool({ threads: 1, workerUrl: SILENT_WORKER })
    const controller = new AbortController()
    const reading = pool.extract(textPdf(['one']), LIMITS, controller.signal)
    controller.abort(new Error('client gone'))
    await expect(reading).rejects.toThrow('client gone')
    expect(pool.stats()).toMatchObject({ threads: 0, busy: 0 })
  })
})
