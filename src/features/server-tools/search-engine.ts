/**
 * The web search engine interface behind `service:web_search`: what a query asks, what an engine answers, and
 * what it can honour. Engines implement it in search-engines/*.ts; search-engines.ts builds the configured ones.
 */

import type { UpstreamTimeouts, UpstreamTransport } from '../../transport/contract'

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

/** What a search needs of the gateway: its transport and deadlines, and the client's signal. */
export interface SearchContext {
  transport: UpstreamTransport
  timeouts: UpstreamTimeouts
  signal: AbortSignal
}

/** An engine's hosted API as the operator configures it (Exa, Firecrawl, Parallel, Perplexity). */
export interface HostedSearchOptions {
  /** The engine's API key. Never logged, never sent anywhere but `baseURL`. */
  apiKey: string
  /** The engine's public API when unset. */
  baseURL?: string
  /** Dollars charged per search; when unset, what the engine reports a search cost, where it does (Exa), else none. */
  pricePerRequest?: number
}

export interface SearchEngine {
  readonly id: string
  /** Parameters it honours; a request setting any other is refused with a 400 naming it. */
  readonly features: ReadonlySet<SearchFeature>
  /** `mode` values it knows. */
  readonly modes: readonly string[]
  /** Results one request may ask for at most (the engine's own ceiling); a larger `max_results` is refused. */
  readonly maxResults?: number
  /** Refuses a parameter value the engine cannot honour (a part of `user_location` it has no field for): the reason, or undefined. */
  refusal?(query: Omit<SearchQuery, 'query' | 'maxResults'>): { field: string; reason: string } | undefined
  /** The operator's price per request; the engine's reported cost, else nothing, when unset. */
  readonly pricePerRequest: number | undefined
  search(query: SearchQuery, context: SearchContext): Promise<SearchResponse>
}

/**
 * The host of a domain-list entry (`*.example.com/docs` → `example.com`), for engines that filter by host only:
 * the path part is then enforced on the results by the tool, never dropped.
 */
export const hostOfDomainEntry = (entry: string): string => entry.split('/')[0]!.replace(/^\*\./, '').toLowerCase()

/** The same hosts once each, in their first order. */
export const hostsOf = (entries: readonly string[]): string[] => [...new Set(entries.map(hostOfDomainEntry))]

/**
 * Text per result an engine is asked for: `max_characters` when set, else what `search_context_size` stands for
 * (OpenRouter's mapping: 5,000 / 15,000 / 30,000 characters), else the engine's own default (undefined).
 */
export const charactersPerResult = (query: Pick<SearchQuery, 'maxCharacters' | 'searchContextSize'>): number | undefined =>
  query.maxCharacters ?? (query.searchContextSize ? CONTEXT_CHARACTERS[query.searchContextSize] : undefined)

const CONTEXT_CHARACTERS = { low: 5_000, medium: 15_000, high: 30_000 } as const
