/**
 * `service:web_search` with `engine: "native"`: the upstream provider searches with its own tool, so the gateway
 * runs nothing. The tool's parameters become the canonical search every adapter that can run one renders
 * (`NativeWebSearch` in the provider contract), with what routing must find in an endpoint to send it there.
 */

import { InvalidRequestError } from '../../core/errors'
import { nativeWebSearchParameters, type NativeWebSearch, type NativeWebSearchParameter } from '../../providers/types'
import type { WebSearchTool } from './web-search'

/** What routing must find in an endpoint for a native search: its adapter runs one, with each parameter used. */
export interface NativeWebSearchPlan {
  search: NativeWebSearch
  /** Parameter names as routing knows them (`web_search`, `web_search.<parameter>`), each with the caller's field. */
  requirements: Array<{ name: string; field: string }>
}

/** Parameters of the tool no provider's own search has (they size or steer the gateway's engines). */
const ENGINE_ONLY_PARAMETERS = ['max_results', 'max_total_results', 'max_characters', 'mode'] as const

/** The field of the tool each parameter of the canonical native search comes from (`domain_paths`: the list that has them). */
const NATIVE_FIELD: Record<Exclude<NativeWebSearchParameter, 'domain_paths'>, string> = {
  max_uses: 'max_uses',
  allowed_domains: 'allowed_domains',
  blocked_domains: 'excluded_domains',
  search_context_size: 'search_context_size',
  user_location: 'user_location',
}

/**
 * `engine: "native"`: the upstream provider searches with its own tool (docs/decisions.md, "Server tools"), so the
 * gateway runs nothing; the plan says what the chosen endpoint's adapter must honour.
 */
export const nativeWebSearchPlan = (tool: WebSearchTool, index: number): NativeWebSearchPlan => {
  const where = `body.tools.${index}.parameters`
  const parameters = tool.parameters ?? {}
  for (const field of ENGINE_ONLY_PARAMETERS) {
    if (parameters[field] !== undefined) throw new InvalidRequestError(`${where}.${field}: not supported by the native search engine (a provider's own web search has no such setting)`)
  }
  const search: NativeWebSearch = {
    ...(parameters.max_uses !== undefined ? { maxUses: parameters.max_uses } : {}),
    // Providers take plain hosts (subdomains included): a `*.` prefix says nothing more.
    ...(parameters.allowed_domains ? { allowedDomains: parameters.allowed_domains.map((entry) => entry.replace(/^\*\./, '')) } : {}),
    ...(parameters.excluded_domains ? { blockedDomains: parameters.excluded_domains.map((entry) => entry.replace(/^\*\./, '')) } : {}),
    ...(parameters.search_context_size ? { searchContextSize: parameters.search_context_size } : {}),
    ...(parameters.user_location ? { userLocation: parameters.user_location } : {}),
  }
  const pathField = parameters.allowed_domains ? 'allowed_domains' : 'excluded_domains'
  return {
    search,
    requirements: [
      { name: 'web_search', field: `${where}.engine` },
      ...nativeWebSearchParameters(search).map((name) => ({ name: `web_search.${name}`, field: `${where}.${name === 'domain_paths' ? pathField : NATIVE_FIELD[name]}` })),
    ],
  }
}
