/**
 * The web search engines the operator configured for `service:web_search` (the interface is search-engine.ts),
 * one module per engine's HTTP API (search-engines/*.ts), each with its base URL, key and price per request. Base
 * URLs come from configuration, so engines are called like providers, without the guard caller-chosen URLs pass.
 */

import type { HostedSearchOptions, SearchEngine } from './search-engine'
import { exaEngine } from './search-engines/exa'
import { firecrawlEngine } from './search-engines/firecrawl'
import { parallelEngine } from './search-engines/parallel'
import { perplexityEngine } from './search-engines/perplexity'
import { searxngEngine, type SearxngOptions } from './search-engines/searxng'

/** The engine ids an operator may configure, in the order the default is picked when none is named. */
export const SEARCH_ENGINE_IDS = ['searxng', 'exa', 'firecrawl', 'parallel', 'perplexity'] as const
export type SearchEngineId = (typeof SEARCH_ENGINE_IDS)[number]

export interface SearchEngineOptions {
  /** The engine a request that names none uses (default: the first configured of searxng, exa, firecrawl, parallel, perplexity). */
  default?: SearchEngineId
  /** A SearXNG instance with its JSON API enabled (`search.formats: [json]` in its settings). */
  searxng?: SearxngOptions
  /** Exa's search API. */
  exa?: HostedSearchOptions
  /** Firecrawl's search API (v2). */
  firecrawl?: HostedSearchOptions
  /** Parallel's Search API (v1). */
  parallel?: HostedSearchOptions
  /** Perplexity's Search API. */
  perplexity?: HostedSearchOptions
}

export interface SearchEngines {
  byId: ReadonlyMap<string, SearchEngine>
  defaultId: string | undefined
}

export const createSearchEngines = (options: SearchEngineOptions = {}): SearchEngines => {
  const byId = new Map<string, SearchEngine>()
  if (options.searxng) byId.set('searxng', searxngEngine(options.searxng))
  if (options.exa) byId.set('exa', exaEngine(options.exa))
  if (options.firecrawl) byId.set('firecrawl', firecrawlEngine(options.firecrawl))
  if (options.parallel) byId.set('parallel', parallelEngine(options.parallel))
  if (options.perplexity) byId.set('perplexity', perplexityEngine(options.perplexity))
  if (options.default && !byId.has(options.default)) {
    throw new TypeError(`modelgate: serverTools.webSearch.default: "${options.default}" is not configured (configured: ${[...byId.keys()].join(', ') || 'none'})`)
  }
  return { byId, defaultId: options.default ?? byId.keys().next().value }
}
