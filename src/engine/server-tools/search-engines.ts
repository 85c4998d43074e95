/**
 * Web search engines behind `service:web_search`: one interface, one module per engine's HTTP API
 * (search-engines/*.ts), each configured by the operator (base URL, key, price per request).
 */

export interface SearchEngineOptions {
  /** The engine a request that names none uses (default: the first configured, in the order below). */
  default?: string
}

export interface SearchEngines {
  byId: ReadonlyMap<string, unknown>
  defaultId: string | undefined
}

export const createSearchEngines = (options: SearchEngineOptions = {}): SearchEngines => ({ byId: new Map(), defaultId: options.default })
