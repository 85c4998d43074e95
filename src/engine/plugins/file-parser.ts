/**
 * `file-parser` (docs/decisions.md, "Plugins"): PDFs in the input (`input_file` parts). `pdf.engine: "native"`
 * sends them as they are, only to endpoints whose adapter passes PDFs on and whose model reads files; the
 * others are skipped. The default engine and `pdf-text` extract the text with unpdf (loaded only then) and send
 * it as `input_text`; `mistral-ocr` and `cloudflare-ai` hand the PDF to the operator's OCR backend. A `file_url`
 * is fetched through the web fetch's SSRF guard. Sizes and pages are capped (`plugins.fileParser`).
 */

import { InvalidRequestError, UpstreamError, isGatewayError } from '../../core/errors'
import type { InputItem } from '../../providers/types'
import type { Attempt } from '../routing'
import type { InferenceService } from '../service'
import { recordStage, type PluginDefinition, type PluginRequest, type RequestPlugin } from './contract'
import type { FileParserPluginSettings } from './file-parser.schema'
import { isDeclaredPdf, readPdf, type FilePart } from './pdf-source'

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

/** Each page's text, by unpdf, refusing a PDF with more pages than the cap. */
const extractPages = async (bytes: Uint8Array, maxPages: number, where: string): Promise<string[]> => {
  const { getDocumentProxy, extractText } = await import('unpdf')
  let document: Awaited<ReturnType<typeof getDocumentProxy>>
  try {
    document = await getDocumentProxy(bytes)
  } catch {
    throw new InvalidRequestError(`${where}: the PDF could not be read`)
  }
  try {
    if (document.numPages > maxPages) throw new InvalidRequestError(`${where}: the PDF has ${document.numPages} pages; the file parser reads at most ${maxPages}`)
    const { text } = await extractText(document, { mergePages: false })
    return text
  } finally {
    await document.destroy()
  }
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
  if (engine === 'pdf-text') return extractPages(bytes, maxPages, where)
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
