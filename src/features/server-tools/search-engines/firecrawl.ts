/**
 * Firecrawl's search API, v2 (the current one; docs.firecrawl.dev, "Search" in the API reference, and its
 * OpenAPI document `api-reference/v2-openapi.json`): `POST /v2/search` with `Authorization: Bearer <key>`,
 * `{query, limit, includeDomains | excludeDomains, country, scrapeOptions?}`, answered with
 * `{success, data: {web: [{url, title, description, markdown?}]}, creditsUsed}`.
 * Without a text size the model reads each result's description; `max_characters` or `search_context_size`
 * (5,000 / 15,000 / 30,000 characters, as for Exa) asks Firecrawl to scrape each result as markdown, cut at that
 * size. Firecrawl filters by host name only, so a domain entry's path is enforced on the results by the tool.
 * It has no search modes, and places a search by country only. It reports credits, not dollars, so a search
 * costs the operator's `pricePerRequest` (else nothing).
 */

import * as v from 'valibot'
import { charactersPerResult, hostsOf, type HostedSearchOptions, type SearchEngine } from '../search-engine'
import { ServerToolFailure } from '../tool-errors'
import { requestJson } from './http'
import { countryOnlyRefusal } from './location'

const AnswerSchema = v.object({
  data: v.looseObject({
    web: v.optional(
      v.array(
        v.looseObject({
          url: v.string(),
          title: v.optional(v.nullable(v.string())),
          description: v.optional(v.nullable(v.string())),
          markdown: v.optional(v.nullable(v.string())),
        }),
      ),
      [],
    ),
  }),
})

export const firecrawlEngine = (options: HostedSearchOptions): SearchEngine => {
  const base = (options.baseURL ?? 'https://api.firecrawl.dev').replace(/\/+$/, '')
  return {
    id: 'firecrawl',
    features: new Set(['allowed_domains', 'excluded_domains', 'max_characters', 'search_context_size', 'user_location']),
    modes: [],
    refusal: (query) => countryOnlyRefusal('firecrawl', query.userLocation),
    pricePerRequest: options.pricePerRequest,
    async search(query, context) {
      const characters = charactersPerResult(query)
      const body = {
        query: query.query,
        limit: query.maxResults,
        ...(query.allowedDomains ? { includeDomains: hostsOf(query.allowedDomains) } : {}),
        ...(query.excludedDomains ? { excludeDomains: hostsOf(query.excludedDomains) } : {}),
        ...(query.userLocation?.country ? { country: query.userLocation.country.toUpperCase() } : {}),
        // Scraping every result costs credits and time: only when the request asked for page text.
        ...(characters === undefined ? {} : { scrapeOptions: { formats: ['markdown'], onlyMainContent: true } }),
      }
      const answer = await requestJson(
        'firecrawl',
        {
          url: `${base}/v2/search`,
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${options.apiKey}` },
          body: JSON.stringify(body),
        },
        context,
      )
      const parsed = v.safeParse(AnswerSchema, answer)
      if (!parsed.success) throw new ServerToolFailure('the firecrawl search engine sent a malformed answer')
      return {
        hits: parsed.output.data.web.map((result) => {
          const text = characters !== undefined && result.markdown ? result.markdown.slice(0, characters) : (result.description ?? '')
          return { url: result.url, title: result.title ?? '', text }
        }),
      }
    },
  }
}
