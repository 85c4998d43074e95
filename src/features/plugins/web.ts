/**
 * `web` (deprecated by OpenRouter in favour of the `service:web_search` tool; docs/decisions.md, "Plugins"): one
 * search per request for the user's last message, through the same engines and rules as `service:web_search`
 * (server-tools/web-search.ts). The results go to the model in a system message before that message, introduced
 * by `search_prompt` (OpenRouter's default wording otherwise); the answer's mentions of the pages found carry
 * `url_citation` annotations, and the search is counted and priced in the usage.
 */

import { InvalidRequestError, UpstreamError, isGatewayError } from '../../core/errors'
import { ServerToolFailure, ServerToolRefusal } from '../server-tools/contract'
import { chooseSearchEngine, webSearchTool, type WebSearchTool } from '../server-tools/web-search'
import type { InferenceService } from '../../engine/service'
import { recordStage, type PluginDefinition, type RequestPlugin } from './contract'
import { pluginToolContext } from './tool-context'
import { addWebFindings, lastUserText, withContextMessage, withWebFindings, withWebUsage, type WebFindings } from './web-context'
import type { WebPluginSettings } from './web.schema'

const ID = 'web'

/** A search query longer than this is cut: engines rank on the start of a query, and some refuse long ones. */
export const WEB_QUERY_MAX = 1_000

/** OpenRouter's default wording; `{date}` is today's date on the gateway's clock. */
const DEFAULT_PROMPT =
  'A web search was conducted on {date}. Incorporate the following web search results into your response. ' +
  'IMPORTANT: Cite them using markdown links named using the domain of the source. Example: [nytimes.com](https://nytimes.com/some-page).'

// The plugin's names for the tool's settings, so an error names the field the caller wrote.
const FIELD_NAMES = { allowed_domains: 'include_domains', excluded_domains: 'exclude_domains' }

/** The plugin's settings as `service:web_search` parameters: `auto` means the gateway's default engine. */
const asTool = (settings: WebPluginSettings): WebSearchTool => {
  const location = settings.user_location
  const userLocation = location
    ? Object.fromEntries(Object.entries(location).filter(([, value]) => value !== null && value !== undefined))
    : undefined
  return {
    type: 'service:web_search',
    parameters: {
      ...(settings.engine && settings.engine !== 'auto' ? { engine: settings.engine } : {}),
      ...(settings.max_results ? { max_results: settings.max_results } : {}),
      ...(settings.include_domains ? { allowed_domains: settings.include_domains } : {}),
      ...(settings.exclude_domains ? { excluded_domains: settings.exclude_domains } : {}),
      ...(settings.mode ? { mode: settings.mode } : {}),
      ...(userLocation ? { user_location: userLocation as NonNullable<NonNullable<WebSearchTool['parameters']>['user_location']> } : {}),
    },
  }
}

const today = (service: InferenceService) => new Date(service.now()).toISOString().slice(0, 10)

export const web: PluginDefinition<WebPluginSettings> = {
  id: ID,
  create(settings, { service, where }): RequestPlugin {
    // The plugin searches before the model answers; the provider's own search runs inside the answer, which only the
    // server tool can ask for. Running the gateway's engine instead would be another engine than the one asked for.
    if (settings.engine === 'native') {
      throw new InvalidRequestError(`${where}.engine: "native" (the provider's own search) is not run by the web plugin; use the service:web_search tool with engine "native", or name a search engine`)
    }
    const searchTool = asTool(settings)
    const place = { where, prefix: '', label: 'the "web" plugin', names: FIELD_NAMES }
    const engine = chooseSearchEngine(service, searchTool, place)
    const tool = webSearchTool(searchTool, place, service, engine)
    const findings: WebFindings = { sources: [], webSearchRequests: 0, cost: 0 }
    return {
      id: ID,
      // One search, at the operator's price; an engine without one is charged what it reports, known only after.
      ...(engine.pricePerRequest ? { price: engine.pricePerRequest } : {}),
      spent: () => findings.cost,
      async beforeAttempts(request, signal) {
        const last = lastUserText(request.body.input)
        if (!last) {
          recordStage(request, ID, 'no user message to search for', { searched: false })
          return
        }
        const query = last.text.trim().slice(0, WEB_QUERY_MAX)
        let outcome
        try {
          outcome = await tool.run(
            { callId: 'web_plugin', itemId: 'web_plugin', arguments: { query } },
            pluginToolContext(service, request, signal),
          )
        } catch (error) {
          if (signal.aborted || isGatewayError(error)) throw error
          const reason = error instanceof ServerToolFailure || error instanceof ServerToolRefusal ? error.message : 'the search failed'
          // The caller asked for an answer grounded in the web: one without it is not passed off as one.
          throw new UpstreamError(`Web search is unavailable: ${reason}`, { cause: error })
        }
        findings.sources = outcome.sources ?? []
        findings.webSearchRequests = outcome.webSearchRequests ?? 1
        findings.cost = outcome.cost ?? 0
        const prompt = (settings.search_prompt ?? DEFAULT_PROMPT).replaceAll('{date}', today(service))
        request.body = { ...request.body, input: withContextMessage(request.body.input, last.index, `${prompt}\n\n${outcome.output}`) }
        recordStage(request, ID, `searched the web for the user's message: ${findings.sources.length} result${findings.sources.length === 1 ? '' : 's'}`, {
          query,
          results: findings.sources.map((source) => source.url),
          web_search_requests: findings.webSearchRequests,
          cost: findings.cost,
        })
      },
      afterWhole: (result) => withWebFindings(result, findings),
      onStreamEvent: (event) => addWebFindings(event, findings),
      onStopped: (used) => ({ ...used, usage: withWebUsage(used.usage, findings)! }),
    }
  },
}
