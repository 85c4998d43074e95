/**
 * The web search engines the operator configured for `service:web_search` (the interface is search-engine.ts),
 * one module per engine's HTTP API (search-engines/*.ts), each with its base URL, key and price per request. Base
 * URLs come from configuration, so engines are called like providers, without the guard caller-chosen URLs pass.
 */

import type { SearchEngine } from './search-engine'
import { exaEngine, type ExaOptions } from './search-engines/exa'
import { searxngEngine, type SearxngOptions } from './search-engines/searxng'

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
