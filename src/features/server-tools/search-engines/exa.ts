/**
 * Exa's search API: `POST /search` with the key in `x-api-key`, `{query, numResults, type, includeDomains,
 * excludeDomains, userLocation, contents}`, answered with `{requestId, results: [{url, title, publishedDate,
 * text?, highlights?}], costDollars?: {total}}`. Modes are Exa's search types; `search_context_size` picks a
 * fixed text size per result (5,000, 15,000 or 30,000 characters, as OpenRouter maps it), `max_characters` an
 * exact one; `user_location` goes as its country code, the only location Exa takes.
 */

import * as v from 'valibot'
import { charactersPerResult, type HostedSearchOptions, type SearchEngine } from '../search-engine'
import { ServerToolFailure } from '../tool-errors'
import { requestJson } from './http'
import { countryOnlyRefusal } from './location'

const AnswerSchema = v.object({
  results: v.array(
    v.looseObject({
      url: v.string(),
      title: v.optional(v.nullable(v.string())),
      publishedDate: v.optional(v.nullable(v.string())),
      text: v.optional(v.nullable(v.string())),
      highlights: v.optional(v.nullable(v.array(v.string()))),
      summary: v.optional(v.nullable(v.string())),
    }),
  ),
  costDollars: v.optional(v.nullable(v.looseObject({ total: v.optional(v.number()) }))),
})

export const exaEngine = (options: HostedSearchOptions): SearchEngine => {
  const base = (options.baseURL ?? 'https://api.exa.ai').replace(/\/+$/, '')
  return {
    id: 'exa',
    features: new Set(['allowed_domains', 'excluded_domains', 'max_characters', 'mode', 'search_context_size', 'user_location']),
    modes: ['instant', 'fast', 'auto', 'deep-lite', 'deep', 'deep-reasoning'],
    refusal: (query) => countryOnlyRefusal('exa', query.userLocation),
    pricePerRequest: options.pricePerRequest,
    async search(query, context) {
      const characters = charactersPerResult(query)
      const body = {
        query: query.query,
        numResults: query.maxResults,
        type: query.mode ?? 'auto',
        ...(query.allowedDomains ? { includeDomains: query.allowedDomains } : {}),
        ...(query.excludedDomains ? { excludeDomains: query.excludedDomains } : {}),
        ...(query.userLocation?.country ? { userLocation: query.userLocation.country.toUpperCase() } : {}),
        // A fixed size asks for the page text cut there; otherwise Exa's highlights, sized per query.
        contents: characters === undefined ? { highlights: true } : { text: { maxCharacters: characters } },
      }
      const answer = await requestJson(
        'exa',
        {
          url: `${base}/search`,
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': options.apiKey },
          body: JSON.stringify(body),
        },
        context,
      )
      const parsed = v.safeParse(AnswerSchema, answer)
      if (!parsed.success) throw new ServerToolFailure('the exa search engine sent a malformed answer')
      const { results, costDollars } = parsed.output
      return {
        hits: results.map((result) => ({
          url: result.url,
          title: result.title ?? '',
          text: result.text ?? result.highlights?.join(' … ') ?? result.summary ?? '',
          ...(result.publishedDate ? { publishedDate: result.publishedDate } : {}),
        })),
        ...(typeof costDollars?.total === 'number' ? { reportedCost: costDollars.total } : {}),
      }
    },
  }
}
