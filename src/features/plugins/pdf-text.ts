/**
 * A PDF's text, page by page, within limits (docs/decisions.md, "No tenant can stall the gateway"): the pages, the
 * bytes its compressed streams inflate to, and the characters extracted. This is the work a file-parser worker
 * thread does (src/workers/file-parser-worker.ts); where worker threads are missing it runs in-process. Time and
 * memory are bounded by whoever runs it: the worker pool terminates a worker past its time and heap limits.
 */

/** What one PDF may cost to read. */
export interface PdfTextLimits {
  /** Pages read at most; a longer PDF is refused. */
  maxPages: number
  /** Characters of text extracted at most, all pages together. */
  maxCharacters: number
  /** Bytes the PDF's Flate streams (other than images, which text extraction does not decode) inflate to, at most. */
  maxDecompressedBytes: number
  /** Milliseconds one PDF may take; enforced by the worker pool (a thread cannot stop itself mid-page). */
  timeoutMs: number
}

/** A limit a PDF went past: `found` is what it had (at least), where that is known. */
export type PdfLimit = 'pages' | 'characters' | 'decompressed_bytes' | 'time' | 'memory'

export type PdfTextOutcome =
  | { ok: true; pages: string[]; threadId?: number }
  | { ok: false; limit: PdfLimit; found?: number; threadId?: number }
  | { ok: false; limit?: undefined; problem: 'unreadable'; threadId?: number }

/** Reads a PDF's text within `limits`; the gateway's default runs it on a worker thread. */
export type PdfTextExtractor = (pdf: Uint8Array, limits: PdfTextLimits, signal: AbortSignal) => Promise<PdfTextOutcome>

const latin1 = new TextDecoder('latin1')

/** The byte ranges of the PDF's Flate-compressed streams that text extraction may inflate (images are skipped). */
const flateStreams = (pdf: Uint8Array): Array<[number, number]> => {
  const text = latin1.decode(pdf)
  const ranges: Array<[number, number]> = []
  const keyword = /stream\r?\n/g
  let dictionaryFrom = 0
  for (let match = keyword.exec(text); match; match = keyword.exec(text)) {
    // `endstream` also ends in `stream`: only a keyword that follows a dictionary opens one.
    if (text.slice(Math.max(0, match.index - 3), match.index) === 'end') continue
    const opens = text.lastIndexOf('obj', match.index)
    const dictionary = text.slice(Math.max(opens, dictionaryFrom), match.index)
    const start = match.index + match[0].length
    const end = text.indexOf('endstream', start)
    if (end < 0) break
    dictionaryFrom = end
    keyword.lastIndex = end + 'endstream'.length
    if (!/\/FlateDecode\b|\/Fl\b/.test(dictionary) || /\/Subtype\s*\/Image\b/.test(dictionary)) continue
    ranges.push([start, end])
  }
  return ranges
}

/**
 * How many bytes the PDF's Flate streams inflate to, counted as they inflate and stopped once past `limit`, so a
 * bomb costs at most `limit` bytes of work. A stream that does not inflate (damaged, another filter first) counts
 * what it gave before it failed: the reader skips such streams too.
 */
export const inflatedSize = async (pdf: Uint8Array, limit: number): Promise<number> => {
  let total = 0
  for (const [start, end] of flateStreams(pdf)) {
    const inflater = new DecompressionStream('deflate')
    const writer = inflater.writable.getWriter()
    // Errors surface on the reader; the writer's own promises must not be left rejected.
    writer.write(pdf.subarray(start, end) as Uint8Array<ArrayBuffer>).catch(() => {})
    writer.close().catch(() => {})
    const reader = inflater.readable.getReader()
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        total += chunk.value.byteLength
        if (total > limit) return total
      }
    } catch {
      // A damaged stream: what it gave is counted.
    } finally {
      reader.cancel().catch(() => {})
    }
  }
  return total
}

/** The text of each page (pdf.js's text items, a line break where it saw one), within `limits`. */
export const extractPdfText = async (pdf: Uint8Array, limits: PdfTextLimits): Promise<PdfTextOutcome> => {
  const inflated = await inflatedSize(pdf, limits.maxDecompressedBytes)
  if (inflated > limits.maxDecompressedBytes) return { ok: false, limit: 'decompressed_bytes', found: inflated }
  const { getDocumentProxy } = await import('unpdf')
  let document: Awaited<ReturnType<typeof getDocumentProxy>>
  try {
    // pdf.js warns on stdout about damaged files; the outcome says all a caller needs.
    document = await getDocumentProxy(pdf, { verbosity: 0 })
  } catch {
    return { ok: false, problem: 'unreadable' }
  }
  try {
    if (document.numPages > limits.maxPages) return { ok: false, limit: 'pages', found: document.numPages }
    const pages: string[] = []
    let characters = 0
    // One page at a time, each released before the next: pages sharing one large stream never hold it all at once.
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number)
      const content = await page.getTextContent()
      const text = content.items
        .map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : ''))
        .join('')
      page.cleanup()
      characters += text.length
      if (characters > limits.maxCharacters) return { ok: false, limit: 'characters', found: characters }
      pages.push(text)
    }
    return { ok: true, pages }
  } catch {
    return { ok: false, problem: 'unreadable' }
  } finally {
    await document.destroy()
  }
}

/**
 * The extractor for runtimes without worker threads: the same limits, but in the gateway's own thread, so a PDF
 * that is slow to read holds every other request up until it is done (docs/decisions.md).
 */
export const inProcessPdfExtractor: PdfTextExtractor = (pdf, limits) => extractPdfText(pdf, limits)
