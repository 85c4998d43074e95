/**
 * JSON answers built once and served many times (the model and provider catalogs): the text and its
 * strong `ETag`, so a client that already holds the text gets a bodiless 304.
 */

import { sha256Hex } from './crypto'
import { jsonTextReply, responseReply, type Reply } from './reply'

export interface CachedJson {
  readonly text: string
  /** Quoted, as the header carries it. */
  readonly etag: string
}

export const cacheJson = async (data: unknown): Promise<CachedJson> => {
  const text = JSON.stringify(data)
  return { text, etag: `"${await sha256Hex(text)}"` }
}

/** RFC 9110 If-None-Match: `*` or a list of tags, compared weakly (a `W/` prefix does not matter). */
const matchesAny = (ifNoneMatch: string, etag: string): boolean =>
  ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)

/** The cached text as a 200, or a 304 without a body when the request's `If-None-Match` names it. */
export const cachedJsonReply = (request: Request, cached: CachedJson, cacheControl: string): Reply => {
  const headers = { etag: cached.etag, 'cache-control': cacheControl }
  const ifNoneMatch = request.headers.get('if-none-match')
  if (ifNoneMatch !== null && matchesAny(ifNoneMatch, cached.etag)) return responseReply(new Response(null, { status: 304, headers }))
  return jsonTextReply(cached.text, 200, headers)
}
