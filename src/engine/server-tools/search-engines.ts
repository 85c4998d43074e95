/**
 * Web search engines behind `service:web_search`: one interface, one module per engine's HTTP API
 * (search-engines/*.ts), each configured by the operator (base URL, key, price per request). Base URLs come from
 * configuration, so engines are called like providers, without the guard that caller-chosen URLs pass.
 */

import type { InferenceService } from '../service'
import { exaEngine, type ExaOptions } from './search-engines/exa'
import { searxngEngine, type SearxngOptions } from './search-engines/searxng'

/** The request parameters an engine may honour beyond the query and the number of results. */
export type SearchFeature = 'allowed_domains' | 'excluded_domains' | 'max_characters' | 'mode' | 'search_context_size' | 'user_location'

export interface UserLocation {
  type: 'approximate'
  city?: string
  country?: string
  region?: string
  timezone?: string
}

export interface SearchQuery {
  query: string
  maxResults: number
  allowedDomains?: readonly string[]
  excludedDomains?: readonly string[]
  /** Characters of text per result at most. */
  maxCharacters?: number
  mode?: string
  searchContextSize?: 'low' | 'medium' | 'high'
  userLocation?: UserLocation
}

export interface SearchHit {
  url: string
  title: string
  /** What the engine says of the page: a snippet, highlights or its text. */
  text: string
  publishedDate?: string
}

export interface SearchResponse {
  hits: SearchHit[]
  /** What the engine says this request cost, in dollars, when it says. */
  reportedCost?: number
}

export interface SearchContext {
  service: InferenceService
  signal: AbortSignal
}

export interface SearchEngine {
  readonly id: string
  /** Parameters it honours; a request setting any other is refused with a 400 naming it. */
  readonly features: ReadonlySet<SearchFeature>
  /** `mode` values it knows. */
  readonly modes: readonly string[]
  /** Refuses a parameter value the engine cannot honour (a part of `user_location` it has no field for): the reason, or undefined. */
  refusal?(query: Omit<SearchQuery, 'query' | 'maxResults'>): { field: string; reason: string } | undefined
  /** The operator's price per request; the engine's reported cost, else nothing, when unset. */
  readonly pricePerRequest: number | undefined
  search(query: SearchQuery, context: SearchContext): Promise<SearchResponse>
}

export interface SearchEngineOptions {
  /** The engine a request that names none uses (default: the first configured of searxng, exa). */
  default?: 'searxng' | 'exa'
  /** A SearXNG instance with its JSON API enabled (`search.formats: [json]` in its settings). */
  searxng?: SearxngOptions
  /** Exa's search API. */
  exa?: ExaOptions
}

export interface SearchEngines {
  byId: ReadonlyMap<string, SearchEngine>
  defaultId: string | undefined
}

export const createSearchEngines = (options: SearchEngineOptions = {}): SearchEngines => {
  const byId = new Map<string, SearchEngine>()
  if (options.searxng) byId.set('searxng', searxngEngine(options.searxng))
  if (options.exa) byId.set('exa', exaEngine(options.exa))
  if (options.default && !byId.has(options.default)) {
    throw new TypeError(`modelgate: serverTools.webSearch.default: "${options.default}" is not configured (configured: ${[...byId.keys()].join(', ') || 'none'})`)
  }
  return { byId, defaultId: options.default ?? byId.keys().next().value }
}
