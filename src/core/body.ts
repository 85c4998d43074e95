/**
 * Request body handling shared by every route: the size limit is enforced while the body streams
 * in (a huge upload is cut off at the limit, never buffered whole), the time to receive it is capped
 * (a client that stalls mid-body gets 408 instead of holding a request open), the media type is
 * checked, and malformed JSON gets a 400 that says where it broke without echoing the body (it may hold keys).
 */

import { withDeadline } from './deadline'
import { findJsonSyntaxProblem } from './json-error'
import { InvalidRequestError, PayloadTooLargeError, RequestTimeoutError, UnsupportedMediaTypeError } from './errors'

/** 1 MiB: the spec's intern limit, and our default elsewhere (docs/decisions.md, Errors and routing). */
export const DEFAULT_BODY_LIMIT = 1_048_576

/** How long a whole request body may take to arrive (docs/decisions.md, "Errors and routing"). */
export const DEFAULT_REQUEST_BODY_TIMEOUT_MS = 30_000

/** What reading a body is bounded by: its size in bytes and the time it may take to arrive. */
export interface BodyBounds {
  limit: number
  timeoutMs: number
}

const isJsonMediaType = (contentType: string | null): boolean => {
  if (!contentType) return false
  const mediaType = contentType.split(';', 1)[0]!.trim().toLowerCase()
  return mediaType === 'application/json'
}

const tooLarge = (limit: number) => new PayloadTooLargeError(`Request body exceeds the limit of ${limit} bytes`)

const describeDuration = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`)

// RFC 9110 §15.5.9: a server sending 408 should close the connection; the rest of a stalled body
// would otherwise be read as the next request on it.
const tooSlow = (timeoutMs: number) =>
  new RequestTimeoutError(`The request body did not arrive within ${describeDuration(timeoutMs)}`, {
    headers: { connection: 'close' },
  })

/** Reads the raw body up to `limit` bytes within `timeoutMs`; throws 413 the moment the limit is passed, 408 at the deadline. */
export const readBodyBytes = async (request: Request, { limit, timeoutMs }: BodyBounds): Promise<Uint8Array> => {
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) {
    await request.body?.cancel().catch(() => {})
    throw tooLarge(limit)
  }
  if (declared !== null && /^\d+$/.test(declared)) {
    // A declared length is what HTTP servers frame the body by (Node, Bun and Deno refuse a body that
    // does not match it), so the body is read in one go: no web stream, which the Node bridge skips entirely.
    const bytes = new Uint8Array(await withDeadline(request.arrayBuffer(), timeoutMs, () => tooSlow(timeoutMs)))
    if (bytes.byteLength > limit) throw tooLarge(limit)
    return bytes
  }
  if (!request.body) return new Uint8Array(0)

  const reader = request.body.getReader()
  // Cancelling the reader ends a pending read at once, so the deadline costs one timer, not a race per chunk.
  let isLate = false
  const timer = setTimeout(() => {
    isLate = true
    reader.cancel().catch(() => {})
  }, timeoutMs)
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (isLate) throw tooSlow(timeoutMs)
      if (done) break
      total += value.byteLength
      if (total > limit) {
        await reader.cancel().catch(() => {})
        throw tooLarge(limit)
      }
      chunks.push(value)
    }
  } finally {
    clearTimeout(timer)
  }
  if (chunks.length === 1) return chunks[0]!
  return concatBytes(chunks, total)
}

/** Joins byte chunks into one fresh buffer of `total` bytes. */
export const concatBytes = (chunks: readonly Uint8Array[], total: number): Uint8Array => {
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

const lineAndColumn = (text: string, offset: number) => {
  let line = 1
  let column = 1
  for (let index = 0; index < offset && index < text.length; index++) {
    if (text.charCodeAt(index) === 10) {
      line++
      column = 1
    } else column++
  }
  return { line, column }
}

// V8's SyntaxError text can quote the input, so the message is built from our own scan.
const describeJsonError = (text: string): string => {
  const problem = findJsonSyntaxProblem(text)
  if (!problem) return 'Malformed JSON in request body'
  if (problem.offset >= text.length) return `Malformed JSON in request body: unexpected end of input, expected ${problem.expected}`
  const { line, column } = lineAndColumn(text, problem.offset)
  return `Malformed JSON in request body at line ${line}, column ${column}: expected ${problem.expected}`
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

/**
 * Reads and parses a JSON body. Resolves `undefined` for an empty body (the route's schema decides
 * whether one was required). A non-empty body must be `application/json` (415 otherwise).
 */
export const readJsonBody = async (request: Request, bounds: BodyBounds): Promise<unknown> => {
  const declared = request.headers.get('content-length')
  const contentType = request.headers.get('content-type')
  if (declared !== null && declared !== '0' && !isJsonMediaType(contentType) && Number(declared) <= bounds.limit) {
    await request.body?.cancel().catch(() => {})
    throw new UnsupportedMediaTypeError('Content-Type must be application/json')
  }
  const bytes = await readBodyBytes(request, bounds)
  if (bytes.byteLength === 0) return undefined
  if (!isJsonMediaType(contentType)) throw new UnsupportedMediaTypeError('Content-Type must be application/json')

  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw new InvalidRequestError('Request body is not valid UTF-8')
  }
  try {
    return JSON.parse(text)
  } catch {
    // Checked only on failure: trimming a large body on every request would copy it for nothing.
    if (/^\s*$/.test(text)) throw new InvalidRequestError('Malformed JSON in request body: the body is only whitespace')
    throw new InvalidRequestError(describeJsonError(text))
  }
}

/** Whether the request carries a body, without reading it. */
export const hasRequestBody = (request: Request): boolean => {
  // From the wire, a body always comes with its length or chunked.
  const declared = request.headers.get('content-length')
  if (declared !== null) return declared !== '0'
  if (request.headers.has('transfer-encoding')) return true
  // A Request built in this process has no length header; a GET or HEAD one never has a body.
  return request.method !== 'GET' && request.method !== 'HEAD' && request.body !== null
}

/** Reads a JSON object body; an empty body reads as `{}` so the schema can name missing fields. */
export const readObjectBody = async (request: Request, bounds: BodyBounds): Promise<Record<string, unknown>> => {
  const value = await readJsonBody(request, bounds)
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidRequestError('body: must be a JSON object')
  }
  return value as Record<string, unknown>
}
