/**
 * Perplexity's Search API (docs.perplexity.ai, API reference "Search"): `POST /search` with `Authorization:
 * Bearer <key>`, `{query, max_results (1..20), search_domain_filter (at most 20, `-host` excludes), country,
 * max_tokens_per_page}`, answered with `{id, results: [{title, url, snippet, date, last_updated}], server_time}`.
 * Perplexity sizes page text in tokens: `max_characters` asks for a quarter as many tokens per page (the tool then
 * cuts the text at exactly that many characters), `search_context_size` for 1,250 / 3,750 / 7,500 tokens (the
 * 5,000 / 15,000 / 30,000 characters of Exa's mapping). It filters by host name only, so a domain entry's path is
 * enforced on the results by the tool. It has no modes, and places a search by country only. It reports no
 * price, so a search costs the operator's `pricePerRequest` (else nothing).
 */

import * as v from 'valibot'
import { hostsOf, type HostedSearchOptions, type SearchEngine } from '../search-engine'
import { ServerToolFailure } from '../tool-errors'
import { requestJson } from './http'
import { countryOnlyRefusal } from './location'

// spec of the API: max_results 1..20, search_domain_filter at most 20 entries.
const MAX_RESULTS = 20
const MAX_DOMAINS = 20
const CONTEXT_TOKENS = { low: 1_250, medium: 3_750, high: 7_500 } as const

const AnswerSchema = v.object({
  results: v.array(
    v.looseObject({
      url: v.string(),
      title: v.optional(v.nullable(v.string())),
      snippet: v.optional(v.nullable(v.string())),
      date: v.optional(v.nullable(v.string())),
    }),
  ),
})

export const perplexityEngine = (options: HostedSearchOptions): SearchEngine => {
  const base = (options.baseURL ?? 'https://api.perplexity.ai').replace(/\/+$/, '')
  return {
    id: 'perplexity',
    features: new Set(['allowed_domains', 'excluded_domains', 'max_characters', 'search_context_size', 'user_location']),
    modes: [],
    maxResults: MAX_RESULTS,
    refusal(query) {
      for (const [field, list] of [['allowed_domains', query.allowedDomains], ['excluded_domains', query.excludedDomains]] as const) {
        if (list && hostsOf(list).length > MAX_DOMAINS) return { field, reason: `the perplexity search engine takes at most ${MAX_DOMAINS} domains` }
      }
      return countryOnlyRefusal('perplexity', query.userLocation)
    },
    pricePerRequest: options.pricePerRequest,
    async search(query, context) {
      const tokens = query.maxCharacters !== undefined ? Math.ceil(query.maxCharacters / 4) : query.searchContextSize ? CONTEXT_TOKENS[query.searchContextSize] : undefined
      const domainFilter = query.allowedDomains ? hostsOf(query.allowedDomains) : query.excludedDomains ? hostsOf(query.excludedDomains).map((host) => `-${host}`) : undefined
      const body = {
        query: query.query,
        max_results: query.maxResults,
        ...(domainFilter ? { search_domain_filter: domainFilter } : {}),
        ...(query.userLocation?.country ? { country: query.userLocation.country.toUpperCase() } : {}),
        ...(tokens === undefined ? {} : { max_tokens_per_page: tokens }),
      }
      const answer = await requestJson(
        'perplexity',
        {
          url: `${base}/search`,
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${options.apiKey}` },
          body: JSON.stringify(body),
        },
        context,
      )
      const parsed = v.safeParse(AnswerSchema, answer)
      if (!parsed.success) throw new ServerToolFailure('the perplexity search engine sent a malformed answer')
      return {
        hits: parsed.output.results.map((result) => ({
          url: result.url,
          title: result.title ?? '',
          text: result.snippet ?? '',
          ...(result.date ? { publishedDate: result.date } : {}),
        })),
      }
    },
  }
}
