/**
 * Parallel's Search API, v1 (docs.parallel.ai, API reference "Search"; the `v1beta` path is its legacy form):
 * `POST /v1/search` with the key in `x-api-key`, `{search_queries, mode?, advanced_settings: {max_results,
 * source_policy: {include_domains | exclude_domains}, excerpt_settings: {max_chars_per_result}, location}}`,
 * answered with `{search_id, results: [{url, title, publish_date, excerpts}], warnings, usage, session_id}`.
 * Modes are Parallel's (`basic`, `advanced`; its default is `advanced`); `max_characters` is the excerpt size per
 * result, `search_context_size` picks one (5,000 / 15,000 / 30,000 characters, as for Exa). Parallel filters by
 * host name only, so a domain entry's path is enforced on the results by the tool. Its `usage` counts SKUs, not
 * dollars, so a search costs the operator's `pricePerRequest` (else nothing).
 */

import * as v from 'valibot'
import { charactersPerResult, hostsOf, type HostedSearchOptions, type SearchEngine } from '../search-engine'
import { ServerToolFailure } from '../tool-errors'
import { requestJson } from './http'
import { countryOnlyRefusal } from './location'

const AnswerSchema = v.object({
  results: v.array(
    v.looseObject({
      url: v.string(),
      title: v.optional(v.nullable(v.string())),
      publish_date: v.optional(v.nullable(v.string())),
      excerpts: v.optional(v.nullable(v.array(v.string()))),
    }),
  ),
})

export const parallelEngine = (options: HostedSearchOptions): SearchEngine => {
  const base = (options.baseURL ?? 'https://api.parallel.ai').replace(/\/+$/, '')
  return {
    id: 'parallel',
    features: new Set(['allowed_domains', 'excluded_domains', 'max_characters', 'mode', 'search_context_size', 'user_location']),
    modes: ['basic', 'advanced'],
    refusal: (query) => countryOnlyRefusal('parallel', query.userLocation),
    pricePerRequest: options.pricePerRequest,
    async search(query, context) {
      const characters = charactersPerResult(query)
      const sourcePolicy = query.allowedDomains
        ? { include_domains: hostsOf(query.allowedDomains) }
        : query.excludedDomains
          ? { exclude_domains: hostsOf(query.excludedDomains) }
          : undefined
      const body = {
        search_queries: [query.query],
        ...(query.mode ? { mode: query.mode } : {}),
        advanced_settings: {
          max_results: query.maxResults,
          ...(sourcePolicy ? { source_policy: sourcePolicy } : {}),
          ...(characters === undefined ? {} : { excerpt_settings: { max_chars_per_result: characters } }),
          ...(query.userLocation?.country ? { location: query.userLocation.country.toLowerCase() } : {}),
        },
      }
      const answer = await requestJson(
        'parallel',
        {
          url: `${base}/v1/search`,
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': options.apiKey },
          body: JSON.stringify(body),
        },
        context,
      )
      const parsed = v.safeParse(AnswerSchema, answer)
      if (!parsed.success) throw new ServerToolFailure('the parallel search engine sent a malformed answer')
      return {
        hits: parsed.output.results.map((result) => ({
          url: result.url,
          title: result.title ?? '',
          text: (result.excerpts ?? []).join(' … '),
          ...(result.publish_date ? { publishedDate: result.publish_date } : {}),
        })),
      }
    },
  }
}
