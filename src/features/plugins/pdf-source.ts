/**
 * The bytes of a PDF an `input_file` part carries: decoded from its `file_data` (a data: URL, or bare base64 with a
 * `.pdf` filename), or fetched from its `file_url` through the web fetch's SSRF guard (server-tools/web-fetch.ts),
 * both within the file parser's size cap. Parts that are not PDFs are not read.
 */

import { InvalidRequestError, PayloadTooLargeError } from '../../core/errors'
import { formatByteSize } from '../../core/byte-size'
import type { InferenceService } from '../../engine/service'
import { fetchGuarded } from '../server-tools/web-fetch'
import { ServerToolFailure } from '../server-tools/tool-errors'
import type { UpstreamResponse } from '../../transport/contract'

export interface FilePart {
  type: 'input_file'
  file_data?: string
  file_url?: string
  file_id?: string | null
  filename?: string
}

const DATA_URL = /^data:([^;,]*)(?:;[^,]*)?,/i
const PDF_MAGIC = '%PDF-'

/** Whether the part is a PDF by what it says of itself: its data URL's type, or its filename; a URL is known only once fetched. */
export const isDeclaredPdf = (part: FilePart): boolean => {
  if (typeof part.file_data === 'string') {
    const type = DATA_URL.exec(part.file_data)?.[1]?.toLowerCase()
    if (type) return type === 'application/pdf'
    return /\.pdf$/i.test(part.filename ?? '')
  }
  return typeof part.file_url === 'string' && (/\.pdf$/i.test(new URL(part.file_url, 'http://x').pathname) || /\.pdf$/i.test(part.filename ?? ''))
}

const hasPdfMagic = (bytes: Uint8Array) => bytes.length >= 5 && String.fromCharCode(...bytes.subarray(0, 5)) === PDF_MAGIC

const tooLarge = (where: string, maxBytes: number) => new PayloadTooLargeError(`${where}: the PDF is larger than the ${formatByteSize(maxBytes)} the file parser reads`)

const decodeBase64 = (base64: string, where: string): Uint8Array => {
  let binary: string
  try {
    binary = atob(base64.replace(/\s+/g, ''))
  } catch {
    throw new InvalidRequestError(`${where}.file_data: not valid base64`)
  }
  const bytes = new Uint8Array(binary.length)
  for (let index = 0; index < binary.length; index++) bytes[index] = binary.charCodeAt(index)
  return bytes
}

/** Reads at most `maxBytes`, and says whether there was more. */
const readBytes = async (response: UpstreamResponse, maxBytes: number): Promise<{ bytes: Uint8Array; isOver: boolean }> => {
  const chunks: Uint8Array[] = []
  let size = 0
  let isOver = false
  try {
    for await (const chunk of response.body) {
      size += chunk.byteLength
      if (size > maxBytes) {
        isOver = true
        break
      }
      chunks.push(chunk)
    }
  } finally {
    await response.cancel()
  }
  const bytes = new Uint8Array(Math.min(size, maxBytes))
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { bytes, isOver }
}

/** The PDF's bytes, or `undefined` for a fetched file that turned out not to be a PDF. */
export const readPdf = async (service: InferenceService, part: FilePart, where: string, signal: AbortSignal): Promise<Uint8Array | undefined> => {
  const { maxBytes } = service.plugins.fileParser
  if (typeof part.file_data === 'string') {
    const base64 = part.file_data.replace(DATA_URL, '')
    // Four base64 characters are three bytes: a file over the cap is refused before it is decoded.
    if (Math.floor((base64.length * 3) / 4) > maxBytes + 3) throw tooLarge(where, maxBytes)
    const bytes = decodeBase64(base64, where)
    if (bytes.length > maxBytes) throw tooLarge(where, maxBytes)
    if (!hasPdfMagic(bytes)) throw new InvalidRequestError(`${where}.file_data: not a PDF (it does not start with %PDF-)`)
    return bytes
  }
  let url: URL
  try {
    url = new URL(part.file_url!)
  } catch {
    throw new InvalidRequestError(`${where}.file_url: must be an absolute http or https URL`)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidRequestError(`${where}.file_url: must be an absolute http or https URL`)
  let fetched: Awaited<ReturnType<typeof fetchGuarded<{ bytes: Uint8Array; isOver: boolean }>>>
  try {
    fetched = await fetchGuarded(service, url, signal, () => undefined, (response) => readBytes(response, maxBytes))
  } catch (error) {
    if (error instanceof ServerToolFailure) throw new InvalidRequestError(`${where}.file_url: the file could not be fetched: ${error.message}`)
    throw error
  }
  if (!fetched.body) throw new InvalidRequestError(`${where}.file_url: the file could not be fetched: it answered HTTP ${fetched.status}`)
  if (fetched.body.isOver) throw tooLarge(where, maxBytes)
  return hasPdfMagic(fetched.body.bytes) ? fetched.body.bytes : undefined
}
