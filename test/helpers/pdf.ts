/**
 * PDFs built in the test, never downloaded: plain text pages, and PDF bombs (a Flate content stream that inflates
 * to many MiB from a few KiB, shared by every page).
 */

import { deflateSync } from 'node:zlib'

interface PdfPlan {
  /** One content stream shared by every page. */
  content: Uint8Array
  isCompressed: boolean
  pages: number
}

const build = ({ content, isCompressed, pages }: PdfPlan): Uint8Array => {
  const pageIds = Array.from({ length: pages }, (_, index) => 5 + index)
  const head = (object: string) => new TextEncoder().encode(object)
  const parts: Array<string | Uint8Array> = []
  const objects: Array<Array<string | Uint8Array>> = [
    ['<< /Type /Catalog /Pages 2 0 R >>'],
    [`<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages} >>`],
    [`<< /Length ${content.length}${isCompressed ? ' /Filter /FlateDecode' : ''} >>\nstream\n`, content, '\nendstream'],
    ['<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'],
    ...pageIds.map(() => ['<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>']),
  ]
  let length = 0
  const push = (part: string | Uint8Array) => {
    const bytes = typeof part === 'string' ? head(part) : part
    parts.push(bytes)
    length += bytes.length
  }
  push('%PDF-1.4\n')
  const offsets: number[] = []
  objects.forEach((object, index) => {
    offsets.push(length)
    push(`${index + 1} 0 obj\n`)
    object.forEach(push)
    push('\nendobj\n')
  })
  const xref = length
  push(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`)
  push(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`)
  const pdf = new Uint8Array(length)
  let offset = 0
  for (const part of parts as Uint8Array[]) {
    pdf.set(part, offset)
    offset += part.length
  }
  return pdf
}

/** A PDF whose pages all show `lines` (Helvetica, one text line per entry), its cross-reference table exact. */
export const textPdf = (lines: string[], pages = 1): Uint8Array => {
  const stream = `BT /F1 12 Tf 72 720 Td ${lines.map((line, index) => `${index ? '0 -16 Td ' : ''}(${line}) Tj`).join(' ')} ET`
  return build({ content: new TextEncoder().encode(stream), isCompressed: false, pages })
}

/**
 * A PDF bomb: one Flate content stream of `inflatedBytes` (a text-showing operator repeated), shared by `pages`
 * pages. 64 MiB deflate to about 64 KiB.
 */
export const pdfBomb = (inflatedBytes: number, pages = 1): Uint8Array => {
  const operator = 'BT /F1 1 Tf 0 0 Td (AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA) Tj ET\n'
  const content = Buffer.alloc(inflatedBytes, operator)
  return build({ content: deflateSync(content, { level: 9 }), isCompressed: true, pages })
}

export const pdfDataUrl = (bytes: Uint8Array) => `data:application/pdf;base64,${Buffer.from(bytes).toString('base64')}`
