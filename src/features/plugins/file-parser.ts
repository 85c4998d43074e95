/**
 * `file-parser` (docs/decisions.md, "Plugins"): PDFs in the input (`input_file` parts). `pdf.engine: "native"`
 * sends them as they are, only to endpoints whose adapter passes PDFs on and whose model reads files; the
 * others are skipped. The default engine and `pdf-text` extract the text with unpdf, on a worker thread by default
 * (pdf-text.ts, src/workers/), within limits on pages, inflated bytes, characters, time and memory, and send it as
 * `input_text`; `mistral-ocr` and `cloudflare-ai` hand the PDF to the operator's OCR backend. A `file_url`
 * is fetched through the web fetch's SSRF guard. Sizes and pages are capped (`plugins.fileParser`).
 */

import { InvalidRequestError, PayloadTooLargeError, UpstreamError, isGatewayError } from '../../core/errors'
import { formatByteSize } from '../../core/byte-size'
import type { InputItem } from '../../providers/types'
import type { Attempt } from '../../engine/routing'
import type { InferenceService } from '../../engine/service'
import { recordStage, type PluginDefinition, type PluginRequest, type RequestPlugin } from './contract'
import type { FileParserPluginSettings } from './file-parser.schema'
import { isDeclaredPdf, readPdf, type FilePart } from './pdf-source'
import type { PdfTextLimits, PdfTextOutcome } from './pdf-text'

const ID = 'file-parser'

type Engine = 'native' | 'pdf-text' | 'mistral-ocr' | 'cloudflare-ai'

interface FoundPart {
  item: number
  part: number
  file: FilePart
}

/** The `input_file` parts of the input's messages that may hold a PDF, where they are. */
const fileParts = (input: InputItem[]): FoundPart[] =>
  input.flatMap((item, itemIndex) => {
    const { type, content } = item as { type?: string; content?: unknown }
    if ((type !== undefined && type !== 'message') || !Array.isArray(content)) return []
    return (content as Array<{ type?: string }>).flatMap((part, partIndex) => {
      if (part.type !== 'input_file') return []
      const file = part as FilePart
      const isCandidate = (typeof file.file_data === 'string' && isDeclaredPdf(file)) || (typeof file.file_data !== 'string' && typeof file.file_url === 'string')
      return isCandidate ? [{ item: itemIndex, part: partIndex, file }] : []
    })
  })

/** The error for a PDF the extractor refused, naming the limit it went past. */
const refusal = (outcome: Exclude<PdfTextOutcome, { ok: true }>, limits: PdfTextLimits, where: string) => {
  switch (outcome.limit) {
    case 'pages':
      return new InvalidRequestError(`${where}: the PDF has ${outcome.found} pages; the file parser reads at most ${limits.maxPages}`)
    case 'characters':
      return new PayloadTooLargeError(`${where}: the PDF's text is longer than the ${limits.maxCharacters} characters the file parser extracts from one file`)
    case 'decompressed_bytes':
      return new PayloadTooLargeError(`${where}: the PDF's compressed streams inflate to more than the ${formatByteSize(limits.maxDecompressedBytes)} the file parser inflates for one file`)
    case 'time':
      return new PayloadTooLargeError(`${where}: the PDF took longer than the ${limits.timeoutMs / 1000} s the file parser spends on one file`)
    case 'memory':
      return new PayloadTooLargeError(`${where}: the PDF needs more than the ${outcome.found ?? '?'} MiB of memory the file parser gives one file`)
    default:
      return new InvalidRequestError(`${where}: the PDF could not be read`)
  }
}

/** Each page's text, by the gateway's PDF text extractor (a worker thread by default), within the file parser's limits. */
const extractPages = async (service: InferenceService, bytes: Uint8Array, where: string, signal: AbortSignal): Promise<string[]> => {
  const { maxPages, maxCharacters, maxDecompressedBytes, timeoutMs, extractor } = service.plugins.fileParser
  const limits: PdfTextLimits = { maxPages, maxCharacters, maxDecompressedBytes, timeoutMs }
  const outcome = await extractor(bytes, limits, signal)
  if (!outcome.ok) throw refusal(outcome, limits, where)
  return outcome.pages
}

const asText = (file: FilePart, pages: string[]) => {
  const name = file.filename ?? (file.file_url ? new URL(file.file_url).pathname.split('/').pop() : undefined) ?? 'document.pdf'
  const body = pages.map((page, index) => `--- Page ${index + 1} ---\n${page.trim()}`).join('\n\n')
  return `[PDF: ${name}, ${pages.length} page${pages.length === 1 ? '' : 's'}]\n\n${body}`
}

/** Whether `attempt`'s endpoint can take every PDF part as it is. */
const readsNatively = (attempt: Attempt, parts: FoundPart[]) => {
  const { pdfInput } = attempt.provider.adapter
  if (!pdfInput || !(attempt.model.inputModalities ?? ['text']).includes('file')) return false
  return parts.every(({ file }) => (typeof file.file_data === 'string' ? pdfInput.fileData : pdfInput.fileUrl))
}

const runNative = (request: PluginRequest, parts: FoundPart[], where: string) => {
  const readers = request.attempts.filter((attempt) => readsNatively(attempt, parts))
  const skipped = request.attempts.filter((attempt) => !readers.includes(attempt)).map((attempt) => `${attempt.model.slug} via ${attempt.provider.descriptor.id}`)
  if (readers.length === 0) {
    throw new InvalidRequestError(`${where}.pdf.engine: "native" needs an endpoint that reads PDFs, and none of ${[...new Set(request.attempts.map((attempt) => attempt.model.slug))].join(', ')} does; use "pdf-text"`)
  }
  request.attempts = readers
  recordStage(request, ID, `${parts.length} PDF${parts.length === 1 ? '' : 's'} sent as they are${skipped.length > 0 ? `; skipped endpoints that cannot read them: ${skipped.join(', ')}` : ''}`, {
    engine: 'native',
    files: parts.length,
    skipped_endpoints: skipped,
  })
}

const extractWith = async (service: InferenceService, engine: Exclude<Engine, 'native'>, bytes: Uint8Array, file: FilePart, where: string, signal: AbortSignal): Promise<string[]> => {
  const { maxPages, ocr } = service.plugins.fileParser
  if (engine === 'pdf-text') return extractPages(service, bytes, where, signal)
  let pages: string[]
  try {
    ;({ pages } = await ocr[engine]!(bytes, { filename: file.filename, signal }))
  } catch (error) {
    if (signal.aborted || isGatewayError(error)) throw error
    throw new UpstreamError(`${where}: the ${engine} OCR backend failed`, { cause: error })
  }
  if (pages.length > maxPages) throw new InvalidRequestError(`${where}: the PDF has ${pages.length} pages; the file parser reads at most ${maxPages}`)
  return pages
}

export const fileParser: PluginDefinition<FileParserPluginSettings> = {
  id: ID,
  create(settings, { service, where }): RequestPlugin {
    // The default engine is text extraction: the same prompt on every endpoint, and no OCR service needed.
    const engine: Engine = settings.pdf?.engine ?? 'pdf-text'
    if ((engine === 'mistral-ocr' || engine === 'cloudflare-ai') && !service.plugins.fileParser.ocr[engine]) {
      throw new InvalidRequestError(`${where}.pdf.engine: "${engine}" needs an OCR backend, and none is configured on this gateway (plugins.fileParser.ocr)`)
    }
    return {
      id: ID,
      async beforeAttempts(request, signal) {
        const input = request.body.input
        const parts = typeof input === 'string' ? [] : fileParts(input as InputItem[])
        if (parts.length === 0) {
          recordStage(request, ID, 'no PDF in the input', { engine, files: 0 })
          return
        }
        if (engine === 'native') return runNative(request, parts, where)
        const items = [...(input as InputItem[])]
        const files: Array<Record<string, unknown>> = []
        for (const found of parts) {
          const partWhere = `body.input.${found.item}.content.${found.part}`
          const bytes = await readPdf(service, found.file, partWhere, signal)
          if (!bytes) continue
          // Read before extraction: the PDF reader takes the buffer over.
          const size = bytes.length
          const pages = await extractWith(service, engine, bytes, found.file, partWhere, signal)
          const text = asText(found.file, pages)
          const item = items[found.item] as { content: unknown[] }
          const content = [...item.content]
          content[found.part] = { type: 'input_text', text }
          items[found.item] = { ...item, content } as InputItem
          files.push({ filename: found.file.filename ?? null, source: typeof found.file.file_data === 'string' ? 'file_data' : 'file_url', bytes: size, pages: pages.length, characters: text.length })
        }
        request.body = { ...request.body, input: items as typeof request.body.input }
        recordStage(request, ID, files.length === 0 ? 'no PDF in the input' : `${files.length} PDF${files.length === 1 ? '' : 's'} turned into text (${engine})`, { engine, files })
      },
    }
  },
}
