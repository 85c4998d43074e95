/**
 * `service:web_search`: the model searches the web through an engine the operator configured (search-engines.ts);
 * the client sees a `web_search_call` item (status and `action: {type: "search", query, sources}`), as OpenAI's
 * own web search shows it, and the final answer's mentions of the pages found carry `url_citation` annotations.
 * Every parameter is honoured by the chosen engine or refused with a 400 naming it.
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../core/errors'
import type { InferenceService } from '../../engine/service'
import { ServerToolRefusal, historyPair, type ServerTool } from './contract'
import { DomainListSchema, domainRefusal } from './domains'
import type { SearchEngine, SearchFeature, SearchResponse } from './search-engine'
import { integer } from '../../core/validation'

const DEFAULT_MAX_RESULTS = 5
const DEFAULT_MAX_TOTAL_RESULTS = 50

export const WebSearchToolSchema = v.pipe(
  v.strictObject({
    type: v.literal('service:web_search'),
    parameters: v.optional(
      v.strictObject({
        engine: v.optional(v.string()),
        max_results: v.optional(integer(1, 25)),
        max_total_results: v.optional(integer(1, 500)),
        max_uses: v.optional(integer(1, 30)),
        max_characters: v.optional(integer(100, 100_000)),
        allowed_domains: v.optional(DomainListSchema),
        excluded_domains: v.optional(DomainListSchema),
        mode: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
        search_context_size: v.optional(v.picklist(['low', 'medium', 'high'])),
        user_location: v.optional(
          v.strictObject({
            type: v.literal('approximate'),
            city: v.optional(v.string()),
            country: v.optional(v.string()),
            region: v.optional(v.string()),
            timezone: v.optional(v.string()),
          }),
        ),
      }),
    ),
  }),
  v.check((tool) => !(tool.parameters?.allowed_domains && tool.parameters.excluded_domains), 'parameters: allowed_domains and excluded_domains cannot be used together'),
)

export type WebSearchTool = v.InferOutput<typeof WebSearchToolSchema>

const CallSchema = v.object({ query: v.pipe(v.string(), v.minLength(1)) })

const FEATURE_OF: Record<string, SearchFeature> = {
  allowed_domains: 'allowed_domains',
  excluded_domains: 'excluded_domains',
  max_characters: 'max_characters',
  mode: 'mode',
  search_context_size: 'search_context_size',
  user_location: 'user_location',
}

/**
 * Where a request wrote the search's settings, for errors: the object (`body.tools.2`), the prefix of its fields
 * (`parameters.`), what to call it, and the names of settings written otherwise (the web plugin's `include_domains`).
 */
export interface SettingsPlace {
  where: string
  prefix: string
  label: string
  names?: Partial<Record<string, string>>
}

/** The engine a request asked for (or the operator's default), checked against what it can honour. */
export const chooseSearchEngine = (service: InferenceService, tool: WebSearchTool, place: SettingsPlace): SearchEngine => {
  const at = (field: string) => `${place.where}.${place.prefix}${place.names?.[field] ?? field}`
  const { byId, defaultId } = service.serverTools.webSearch
  const configured = [...byId.keys()].join(', ') || 'none'
  const requested = tool.parameters?.engine
  const id = requested === undefined || requested === 'auto' ? defaultId : requested
  if (id === undefined) throw new InvalidRequestError(`${place.where}: ${place.label} needs a search engine, and none is configured on this gateway`)
  const engine = byId.get(id)
  if (!engine) throw new InvalidRequestError(`${at('engine')}: "${id}" is not configured on this gateway (configured: ${configured})`)
  const parameters = tool.parameters ?? {}
  for (const [field, feature] of Object.entries(FEATURE_OF)) {
    if (parameters[field as keyof typeof parameters] !== undefined && !engine.features.has(feature)) {
      throw new InvalidRequestError(`${at(field)}: not supported by the ${engine.id} search engine`)
    }
  }
  if (parameters.mode !== undefined && !engine.modes.includes(parameters.mode)) {
    throw new InvalidRequestError(`${at('mode')}: must be one of ${engine.modes.join(', ')} for the ${engine.id} search engine`)
  }
  if (engine.maxResults !== undefined && parameters.max_results !== undefined && parameters.max_results > engine.maxResults) {
    throw new InvalidRequestError(`${at('max_results')}: the ${engine.id} search engine gives at most ${engine.maxResults} results a search`)
  }
  const refusal = engine.refusal?.({
    ...(parameters.user_location ? { userLocation: parameters.user_location } : {}),
    ...(parameters.allowed_domains ? { allowedDomains: parameters.allowed_domains } : {}),
    ...(parameters.excluded_domains ? { excludedDomains: parameters.excluded_domains } : {}),
  })
  if (refusal) throw new InvalidRequestError(`${at(refusal.field)}: ${refusal.reason}`)
  return engine
}

const sourcesOf = (action: unknown): string[] => {
  const sources = (action as { sources?: unknown } | undefined)?.sources
  return Array.isArray(sources) ? sources.flatMap((source) => (typeof source?.url === 'string' ? [source.url as string] : [])) : []
}

export const webSearchTool = (tool: WebSearchTool, place: SettingsPlace, service: InferenceService, engine = chooseSearchEngine(service, tool, place)): ServerTool => {
  const parameters = tool.parameters ?? {}
  const maxResults = parameters.max_results ?? DEFAULT_MAX_RESULTS
  const maxTotal = parameters.max_total_results ?? DEFAULT_MAX_TOTAL_RESULTS
  let uses = 0
  let resultsGiven = 0
  return {
    type: tool.type,
    itemIdPrefix: 'ws',
    itemType: 'web_search_call',
    definition: {
      type: 'function',
      name: 'service_web_search',
      description:
        'Searches the web and returns the most relevant pages with their URL, title and an excerpt. When you use a result, cite its URL.' +
        (parameters.allowed_domains ? ` Results come only from: ${parameters.allowed_domains.join(', ')}.` : ''),
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'What to search for' } },
        required: ['query'],
        additionalProperties: false,
      },
    },
    startEvents: ['response.web_search_call.in_progress'],
    endEvents: ['response.web_search_call.completed'],
    pendingItem: (id) => ({ type: 'web_search_call', id, status: 'in_progress' }),
    failedItem: (id, _message, details) => ({ type: 'web_search_call', id, status: 'failed', ...details }),
    toHistory(item) {
      const action = item.action as { query?: unknown } | undefined
      const query = typeof action?.query === 'string' ? action.query : ''
      const urls = sourcesOf(item.action)
      const output = item.status === 'completed' ? (urls.length > 0 ? `Pages found:\n${urls.join('\n')}` : 'No results.') : 'The search failed.'
      return historyPair(item, 'service_web_search', { query }, output)
    },
    async run(call, context) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('query must be a non-empty string')
      const { query } = parsed.output
      if (parameters.max_uses !== undefined && uses >= parameters.max_uses) throw new ServerToolRefusal(`this request may search at most ${parameters.max_uses} times (max_uses)`)
      const room = Math.min(maxResults, maxTotal - resultsGiven)
      if (room <= 0) throw new ServerToolRefusal(`this request has had its ${maxTotal} results (max_total_results)`)
      uses++
      // Reserved before the search, so calls of one turn running together share the total in the model's order.
      resultsGiven += room
      if (engine.pricePerRequest) {
        // The search's price is held on the request's spend limits before it is spent; a refused hold runs nothing.
        try {
          await context.holdSpend(engine.pricePerRequest)
        } catch (error) {
          uses--
          resultsGiven -= room
          throw error
        }
      }
      context.progress({ type: 'response.web_search_call.searching' })
      let response: SearchResponse
      try {
        response = await engine.search(
        {
          query,
          maxResults: room,
          ...(parameters.allowed_domains ? { allowedDomains: parameters.allowed_domains } : {}),
          ...(parameters.excluded_domains ? { excludedDomains: parameters.excluded_domains } : {}),
          ...(parameters.max_characters ? { maxCharacters: parameters.max_characters } : {}),
          ...(parameters.mode ? { mode: parameters.mode } : {}),
          ...(parameters.search_context_size ? { searchContextSize: parameters.search_context_size } : {}),
          ...(parameters.user_location ? { userLocation: parameters.user_location } : {}),
        },
          { transport: context.service.transport, timeouts: context.service.timeouts, signal: context.signal },
        )
      } catch (error) {
        resultsGiven -= room
        throw error
      }
      // The domain lists hold whatever the engine did with them: a result outside them never reaches the model.
      const hits = response.hits
        .filter((hit) => {
          try {
            return domainRefusal(new URL(hit.url), parameters.allowed_domains, parameters.excluded_domains) === undefined
          } catch {
            return false
          }
        })
        .slice(0, room)
        .map((hit) => (parameters.max_characters && hit.text.length > parameters.max_characters ? { ...hit, text: hit.text.slice(0, parameters.max_characters) } : hit))
      resultsGiven -= room - hits.length
      const listing = hits
        .map((hit, position) => [`[${position + 1}] ${hit.title}`, `URL: ${hit.url}`, ...(hit.publishedDate ? [`Published: ${hit.publishedDate}`] : []), hit.text].join('\n'))
        .join('\n\n')
      return {
        output: hits.length === 0 ? `No results for "${query}".` : `Results for "${query}":\n\n${listing}`,
        item: {
          type: 'web_search_call',
          id: call.itemId,
          status: 'completed',
          action: { type: 'search', query, sources: hits.map((hit) => ({ type: 'url', url: hit.url })) },
        },
        webSearchRequests: 1,
        cost: engine.pricePerRequest ?? response.reportedCost ?? 0,
        sources: hits.map((hit) => ({ url: hit.url, title: hit.title })),
      }
    },
  }
}
