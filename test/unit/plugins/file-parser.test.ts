/**
 * The file-parser plugin with small hand-written PDFs: text extracted by unpdf and sent as `input_text` (from
 * `file_data` and from a loopback `file_url` through the SSRF guard), the native engine routing to endpoints that
 * read PDFs, the OCR engines' backend option, and the caps.
 */

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { HostResolver, UpstreamGuardOptions } from '../../../src/core/upstream-guard'
import { createTestGateway, scriptedProvider, type ScriptedProvider, type TestGateway } from '../../../src/testing'
import { undiciTransport, type UndiciTransport } from '../../../src/transport/undici'
import { startUpstream, type Upstream } from '../../helpers/upstream'
import { pdfBomb, pdfDataUrl, textPdf } from '../../helpers/pdf'
import { createFileParserPool, FILE_PARSER_RETRY_AFTER_SECONDS } from '../../../src/workers/file-parser-pool'

const SILENT_WORKER = new URL('../../fixtures/workers/silent-worker.mjs', import.meta.url)

/** A minimal one-page PDF (Helvetica, one text line per entry), its cross-reference table exact. */
const makePdf = (lines: string[], pageCount = 1): Uint8Array => {
  const stream = `BT /F1 12 Tf 72 720 Td ${lines.map((line, index) => `${index ? '0 -16 Td ' : ''}(${line}) Tj`).join(' ')} ET`
  const pageIds = Array.from({ length: pageCount }, (_, index) => 5 + index)
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pageCount} >>`,
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    ...pageIds.map(() => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>'),
  ]
  let text = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((object, index) => {
    offsets.push(text.length)
    text += `${index + 1} 0 obj\n${object}\nendobj\n`
  })
  const xref = text.length
  text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`
  text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return new TextEncoder().encode(text)
}
const dataUrl = (bytes: Uint8Array) => `data:application/pdf;base64,${Buffer.from(bytes).toString('base64')}`
const INVOICE = makePdf(['Invoice 2024-117', 'Total due: 42 EUR'])

let files: Upstream
let transport: UndiciTransport
let testGateway: TestGateway | undefined
beforeAll(async () => {
  files = await startUpstream((request) =>
    request.url === '/invoice' ? { headers: { 'content-type': 'application/pdf' }, body: INVOICE } : { status: 404, body: 'missing' },
  )
  transport = undiciTransport()
})
afterAll(async () => {
  await files.close()
  await transport.close()
})
afterEach(async () => {
  await testGateway?.close()
  testGateway = undefined
  files.requests.length = 0
})

const METADATA = { headers: { 'x-service-metadata': 'enabled' } }
const PRICING = { prompt: 0.000001, completion: 0.000002 }
const port = () => Number(new URL(files.url).port)
/** The test's DNS (as in the web fetch's tests): every name, under the reserved `.test` domain, is this machine. */
const resolve: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }]
const guard = (): UpstreamGuardOptions => ({ allowPrivateNetworks: ['127.0.0.1/32'], allowedPorts: [port()], resolve })
const fileUrl = (path: string) => `http://files.example.test:${port()}${path}`

const serve = async (options: Record<string, unknown> = {}) => {
  const model = scriptedProvider({ reply: 'Read it.' })
  testGateway = await createTestGateway({ providers: { scripted: model }, transport, serverTools: { webFetch: { guard: guard() } }, ...options })
  return model
}

const withFile = (file: Record<string, unknown>) => [{ role: 'user', content: [{ type: 'input_text', text: 'What is due?' }, { type: 'input_file', ...file }] }]
const sentParts = (model: ScriptedProvider) => (model.lastCall!.input as Array<{ content: Array<Record<string, unknown>> }>)[0]!.content

describe('file-parser: text extraction', () => {
  it('turns a PDF in file_data into input_text, and reports the stage', async () => {
    const model = await serve()
    const response = await testGateway!.responses({ input: withFile({ filename: 'invoice.pdf', file_data: dataUrl(INVOICE) }), plugins: [{ id: 'file-parser' }] }, METADATA)
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(sentParts(model)).toEqual([
      { type: 'input_text', text: 'What is due?' },
      { type: 'input_text', text: '[PDF: invoice.pdf, 1 page]\n\n--- Page 1 ---\nInvoice 2024-117\nTotal due: 42 EUR' },
    ])
    expect(body.service_metadata.pipeline).toEqual([
      {
        type: 'plugin',
        name: 'file-parser',
        summary: '1 PDF turned into text (pdf-text)',
        data: { engine: 'pdf-text', files: [{ filename: 'invoice.pdf', source: 'file_data', bytes: INVOICE.length, pages: 1, characters: expect.any(Number) }] },
      },
    ])
  })

  it('fetches a file_url through the guard, from a Chat Completions file part', async () => {
    const model = await serve()
    const response = await testGateway!.call('POST', '/chat/completions', {
      key: testGateway!.regularKey,
      json: {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'What is due?' }, { type: 'file', file: { filename: 'invoice.pdf', file_data: fileUrl('/invoice') } }] }],
        plugins: [{ id: 'file-parser', pdf: { engine: 'pdf-text' } }],
      },
    })
    expect(response.status, await response.clone().text()).toBe(200)
    expect(files.requests.map((request) => `${request.method} ${request.url}`)).toEqual(['GET /invoice'])
    expect(sentParts(model)[1]!.text).toContain('Total due: 42 EUR')
  })

  it('refuses a file_url the guard does not allow, before any upstream call', async () => {
    const model = await scriptedProvider({ reply: 'never' })
    // The default guard: public addresses only, so this machine is refused.
    testGateway = await createTestGateway({ providers: { scripted: model }, transport, serverTools: { webFetch: { guard: { allowedPorts: [port()], resolve } } } })
    const response = await testGateway.responses({ input: withFile({ file_url: fileUrl('/invoice') }), plugins: [{ id: 'file-parser' }] })
    expect(response.status).toBe(400)
    expect((await response.json()).error.message).toBe('body.input.0.content.1.file_url: the file could not be fetched: the URL is not allowed: the host must resolve to public addresses only')
    expect(files.requests).toHaveLength(0)
    expect(model.calls).toHaveLength(0)
  })

  it('caps the size and the pages of a PDF', async () => {
    await serve({ plugins: { fileParser: { maxBytes: 1024, maxPages: 2 } } })
    const big = makePdf(Array.from({ length: 60 }, (_, index) => `Line ${index} of a long document`))
    const tooBig = await testGateway!.responses({ input: withFile({ file_data: dataUrl(big) }), plugins: [{ id: 'file-parser' }] })
    expect(tooBig.status).toBe(413)
    expect((await tooBig.json()).error.message).toBe('body.input.0.content.1: the PDF is larger than the 1 KiB the file parser reads')
    const long = await testGateway!.responses({ input: withFile({ file_data: dataUrl(makePdf(['p'], 3)) }), plugins: [{ id: 'file-parser' }] })
    expect(long.status).toBe(400)
    expect((await long.json()).error.message).toBe('body.input.0.content.1: the PDF has 3 pages; the file parser reads at most 2')
  })

  it('refuses file_data that is not a PDF, and says when there is no PDF at all', async () => {
    await serve()
    const fake = await testGateway!.responses({ input: withFile({ file_data: `data:application/pdf;base64,${Buffer.from('hello').toString('base64')}` }), plugins: [{ id: 'file-parser' }] })
    expect(fake.status).toBe(400)
    expect((await fake.json()).error.message).toBe('body.input.0.content.1.file_data: not a PDF (it does not start with %PDF-)')
    const none = await testGateway!.responses({ input: 'Hi', plugins: [{ id: 'file-parser' }] }, METADATA)
    expect((await none.json()).service_metadata.pipeline).toEqual([{ type: 'plugin', name: 'file-parser', summary: 'no PDF in the input', data: { engine: 'pdf-text', files: 0 } }])
  })
})

describe('file-parser: no PDF stalls the gateway', () => {
  const MiB = 1024 * 1024
  const ask = (pdf: Uint8Array) => testGateway!.responses({ input: withFile({ filename: 'bomb.pdf', file_data: pdfDataUrl(pdf) }), plugins: [{ id: 'file-parser' }] })

  it('a PDF bomb (a 64 MiB stream shared by 20 pages, a few hundred KiB sent) is refused by its inflated size: 413 naming the limit', async () => {
    const model = await serve()
    const response = await ask(pdfBomb(64 * MiB, 20))
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual({
      error: { code: 413, message: 'body.input.0.content.1: the PDF\'s compressed streams inflate to more than the 32 MiB the file parser inflates for one file' },
    })
    expect(model.calls).toHaveLength(0)
  })

  it('a PDF with more text than the character limit: 413 naming the limit', async () => {
    await serve({ plugins: { fileParser: { maxCharacters: 20_000 } } })
    const response = await ask(pdfBomb(64 * 1024, 2))
    expect(response.status).toBe(413)
    expect((await response.json()).error.message).toBe('body.input.0.content.1: the PDF\'s text is longer than the 20000 characters the file parser extracts from one file')
  })

  it('a PDF that takes longer than the time limit: 413 naming the limit', async () => {
    const pool = createFileParserPool({ threads: 1, workerUrl: SILENT_WORKER })
    await serve({ plugins: { fileParser: { timeoutMs: 200, extractor: pool.extract } } })
    const response = await ask(textPdf(['slow']))
    expect(response.status).toBe(413)
    expect((await response.json()).error.message).toBe('body.input.0.content.1: the PDF took longer than the 0.2 s the file parser spends on one file')
    await pool.close()
  })

  it('a full pool sheds load: 503 with Retry-After while its one worker is busy', async () => {
    const pool = createFileParserPool({ threads: 1, maxQueued: 0, workerUrl: SILENT_WORKER })
    const model = await serve({ plugins: { fileParser: { timeoutMs: 30_000, extractor: pool.extract } } })
    const first = ask(textPdf(['first']))
    // The first request holds the worker once the pool has taken it.
    while (pool.stats().busy === 0) await new Promise((resolve) => setImmediate(resolve))
    const second = await ask(textPdf(['second']))
    expect(second.status).toBe(503)
    expect(second.headers.get('retry-after')).toBe(String(FILE_PARSER_RETRY_AFTER_SECONDS))
    expect(await second.json()).toEqual({ error: { code: 503, message: `The gateway's document readers are busy (1 document being read and 0 waiting); retry in ${FILE_PARSER_RETRY_AFTER_SECONDS} s` } })
    await pool.close()
    expect((await first).status).toBe(503)
    expect(model.calls).toHaveLength(0)
  })

  it('the gateway\'s default reads PDFs on its worker pool, started on the first PDF', async () => {
    const started: unknown[] = []
    const onWorker = (worker: unknown) => started.push(worker)
    // Node announces every worker thread created in the process.
    process.on('worker', onWorker)
    try {
      await serve()
      expect(started).toHaveLength(0)
      const response = await ask(textPdf(['Total due: 42 EUR']))
      expect(response.status).toBe(200)
      expect(started).toHaveLength(1)
    } finally {
      process.off('worker', onWorker)
    }
  })
})

describe('file-parser: native and OCR engines', () => {
  it('native: sends the PDF as it is, only to endpoints that read files', async () => {
    const reader = scriptedProvider({ reply: 'native ok' })
    const blind = scriptedProvider({ reply: 'never' })
    testGateway = await createTestGateway({
      providers: { reader, blind },
      models: [
        { slug: 'test/blind', name: 'Blind', endpoints: [{ provider: 'blind', model: 'b', contextLength: 128_000, pricing: PRICING }] },
        { slug: 'test/reader', name: 'Reader', inputModalities: ['text', 'file'], endpoints: [{ provider: 'reader', model: 'r', contextLength: 128_000, pricing: PRICING }] },
      ],
    })
    const file = { filename: 'invoice.pdf', file_data: dataUrl(INVOICE) }
    const response = await testGateway.responses({ models: ['test/blind', 'test/reader'], input: withFile(file), plugins: [{ id: 'file-parser', pdf: { engine: 'native' } }] }, METADATA)
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(blind.calls).toHaveLength(0)
    expect(sentPartsOf(reader)[1]).toEqual({ type: 'input_file', ...file })
    expect(body.service_metadata.pipeline).toEqual([
      { type: 'plugin', name: 'file-parser', summary: '1 PDF sent as they are; skipped endpoints that cannot read them: test/blind via blind', data: { engine: 'native', files: 1, skipped_endpoints: ['test/blind via blind'] } },
    ])
    const refused = await testGateway.responses({ model: 'test/blind', input: withFile(file), plugins: [{ id: 'file-parser', pdf: { engine: 'native' } }] })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toBe('body.plugins.0.pdf.engine: "native" needs an endpoint that reads PDFs, and none of test/blind does; use "pdf-text"')
  })

  it('mistral-ocr: hands the PDF to the configured OCR backend, and is refused without one', async () => {
    const received: Array<{ size: number; filename: string | undefined }> = []
    const model = await serve({
      plugins: {
        fileParser: {
          ocr: {
            'mistral-ocr': async (pdf: Uint8Array, context: { filename: string | undefined }) => {
              received.push({ size: pdf.length, filename: context.filename })
              return { pages: ['# Invoice 2024-117\n\n| Total | 42 EUR |'] }
            },
          },
        },
      },
    })
    const response = await testGateway!.responses({ input: withFile({ filename: 'invoice.pdf', file_data: dataUrl(INVOICE) }), plugins: [{ id: 'file-parser', pdf: { engine: 'mistral-ocr' } }] })
    expect(response.status).toBe(200)
    expect(received).toEqual([{ size: INVOICE.length, filename: 'invoice.pdf' }])
    expect(sentParts(model)[1]!.text).toBe('[PDF: invoice.pdf, 1 page]\n\n--- Page 1 ---\n# Invoice 2024-117\n\n| Total | 42 EUR |')
    const refused = await testGateway!.responses({ input: 'x', plugins: [{ id: 'file-parser', pdf: { engine: 'cloudflare-ai' } }] })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toBe('body.plugins.0.pdf.engine: "cloudflare-ai" needs an OCR backend, and none is configured on this gateway (plugins.fileParser.ocr)')
  })
})

const sentPartsOf = sentParts
