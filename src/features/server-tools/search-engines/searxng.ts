/**
 * SearXNG, the self-hosted metasearch engine, through its JSON API: `GET /search?q=…&format=json` answers
 * `{query, results: [{url, title, content, publishedDate?, engine}], …}`. It has no domain filter of its own, so
 * the domain lists are honoured by keeping only the results they allow; it has no modes, context sizes or
 * locations, so a request asking for those is refused.
 */

import * as v from 'valibot'
import type { SearchEngine } from '../search-engine'
import { ServerToolFailure } from '../tool-errors'
import { requestJson } from './http'

export interface SearxngOptions {
  /** The instance's base URL, e.g. `http://searxng:8080` (the path before `/search`). */
  baseURL: string
  /** Headers for every request (an instance behind a proxy that wants a token). Never logged. */
  headers?: Record<string, string>
  /** Dollars charged per search (default none: a self-hosted engine costs the caller nothing). */
  pricePerRequest?: number
}

const AnswerSchema = v.object({
  results: v.array(
    v.looseObject({
      url: v.string(),
      title: v.optional(v.nullable(v.string())),
      content: v.optional(v.nullable(v.string())),
      publishedDate: v.optional(v.nullable(v.string())),
    }),
  ),
})

export const searxngEngine = (options: SearxngOptions): SearchEngine => {
  const base = options.baseURL.replace(/\/+$/, '')
  return {
    id: 'searxng',
    features: new Set(['allowed_domains', 'excluded_domains', 'max_characters']),
    modes: [],
    pricePerRequest: options.pricePerRequest,
    async search(query, context) {
      const url = new URL(`${base}/search`)
      url.searchParams.set('q', query.query)
      url.searchParams.set('format', 'json')
      const answer = await requestJson(
        'searxng',
        { url: url.href, method: 'GET', headers: { accept: 'application/json', ...options.headers }, body: '' },
        context,
      )
      const parsed = v.safeParse(AnswerSchema, answer)
      if (!parsed.success) throw new ServerToolFailure('the searxng search engine sent a malformed answer')
      return {
        hits: parsed.output.results.map((result) => ({
          url: result.url,
          title: result.title ?? '',
          text: result.content ?? '',
          ...(result.publishedDate ? { publishedDate: result.publishedDate } : {}),
        })),
      }
    },
  }
}
