/**
 * The operator's settings for server tools (`createGateway({ serverTools })`), built once with the inference
 * service: the web fetch's limits and its own SSRF guard, and the web search engines with their keys.
 */

import { createUpstreamGuard, type UpstreamGuard, type UpstreamGuardOptions } from '../../core/upstream-guard'
import type { ToolExecutors } from './executor-types'
import { createSearchEngines, type SearchEngineOptions, type SearchEngines } from './search-engines'
import { inProcessPageText, type PageTextReader } from './page-text'

export interface WebFetchOptions {
  /** Bytes of a page read at most; the rest is cut off (default 2 MiB). */
  maxBytes?: number
  /** Time for a whole fetch, redirects included (default 15 s). */
  timeoutMs?: number
  /** Redirects followed at most, each one checked again (default 5). */
  maxRedirects?: number
  userAgent?: string
  /**
   * Where fetches may go: the guard's options, by default https and http on their default ports to public
   * addresses only, whatever `upstreamGuard` allows Azure endpoints. `resolve` defaults to `upstreamGuard.resolve`.
   */
  guard?: UpstreamGuardOptions
  /** Reads a fetched HTML page's text (the gateway passes its worker pool; in-process otherwise). */
  readPageText?: PageTextReader
}

export interface ServerToolOptions {
  webFetch?: WebFetchOptions
  /** Search engines for `service:web_search`, by engine id; each configured one may be asked for by name. */
  webSearch?: SearchEngineOptions
  /** The operator's runners of sandbox and file tools (`service:bash`, …); a tool without one is refused. */
  executors?: ToolExecutors
}

export interface WebFetchSettings {
  maxBytes: number
  timeoutMs: number
  maxRedirects: number
  userAgent: string
  guard: UpstreamGuard
  readPageText: PageTextReader
}

export interface ServerToolSettings {
  webFetch: WebFetchSettings
  webSearch: SearchEngines
  executors: ToolExecutors
}

export const createServerToolSettings = (options: ServerToolOptions = {}, upstreamGuard: UpstreamGuardOptions = {}): ServerToolSettings => {
  const fetchOptions = options.webFetch ?? {}
  const resolve = fetchOptions.guard?.resolve ?? upstreamGuard.resolve
  return {
    webFetch: {
      maxBytes: fetchOptions.maxBytes ?? 2 * 1024 * 1024,
      timeoutMs: fetchOptions.timeoutMs ?? 15_000,
      maxRedirects: fetchOptions.maxRedirects ?? 5,
      userAgent: fetchOptions.userAgent ?? 'modelgate-web-fetch/1',
      // Web pages are often plain http; everything else stays strict unless the operator says otherwise.
      guard: createUpstreamGuard({ allowHttp: true, ...fetchOptions.guard, ...(resolve ? { resolve } : {}) }),
      readPageText: fetchOptions.readPageText ?? inProcessPageText,
    },
    webSearch: createSearchEngines(options.webSearch),
    executors: { ...options.executors },
  }
}
