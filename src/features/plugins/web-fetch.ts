/**
 * `web-fetch` (docs/decisions.md, "Plugins"): the pages whose URLs the user's last message holds are fetched once,
 * before the model is called, with `service:web_fetch`'s rules (server-tools/web-fetch.ts: the SSRF guard, the
 * domain lists, `max_content_tokens`), at most `max_uses` of them. Their text goes to the model in a system message
 * before that message; a page that cannot be read is said so there. Mentions of the pages in the answer carry
 * `url_citation` annotations.
 */

import { ServerToolFailure, ServerToolRefusal } from '../server-tools/contract'
import { webFetchTool } from '../server-tools/web-fetch'
import { recordStage, type PluginDefinition, type RequestPlugin } from './contract'
import { pluginToolContext } from './tool-context'
import { addWebFindings, lastUserText, withContextMessage, withWebFindings, type WebFindings } from './web-context'
import type { WebFetchPluginSettings } from './web-fetch.schema'

const ID = 'web-fetch'

/** Pages fetched when `max_uses` is not set. */
export const DEFAULT_FETCHES = 5

// Whole http(s) URLs, without the punctuation prose puts after them.
const URL_PATTERN = /\bhttps?:\/\/[^\s<>"'`]+/gi
const TRAILING = /[).,;:!?\]]+$/

/** The distinct URLs of `text`, in order. */
export const urlsIn = (text: string): string[] => [...new Set([...text.matchAll(URL_PATTERN)].map((match) => match[0].replace(TRAILING, '')))]

export const webFetch: PluginDefinition<WebFetchPluginSettings> = {
  id: ID,
  create(settings, { service }): RequestPlugin {
    const maxFetches = settings.max_uses ?? DEFAULT_FETCHES
    const tool = webFetchTool({
      type: 'service:web_fetch',
      parameters: {
        max_uses: maxFetches,
        ...(settings.max_content_tokens ? { max_content_tokens: settings.max_content_tokens } : {}),
        ...(settings.allowed_domains ? { allowed_domains: settings.allowed_domains } : {}),
        ...(settings.blocked_domains ? { blocked_domains: settings.blocked_domains } : {}),
      },
    })
    const findings: WebFindings = { sources: [], webSearchRequests: 0, cost: 0 }
    return {
      id: ID,
      async beforeAttempts(request, signal) {
        const last = lastUserText(request.body.input)
        const urls = last ? urlsIn(last.text) : []
        if (!last || urls.length === 0) {
          recordStage(request, ID, 'no URL in the user message', { fetched: [] })
          return
        }
        const chosen = urls.slice(0, maxFetches)
        const context = pluginToolContext(service, request, signal)
        const pages = await Promise.all(
          chosen.map(async (url, index) => {
            try {
              const outcome = await tool.run({ callId: `web_fetch_${index}`, itemId: `web_fetch_${index}`, arguments: { url } }, context)
              findings.sources.push(...(outcome.sources ?? []))
              return { url, text: outcome.output, status: 'fetched' }
            } catch (error) {
              if (signal.aborted || !(error instanceof ServerToolFailure || error instanceof ServerToolRefusal)) throw error
              return { url, text: `URL: ${url}\nError: ${error.message}`, status: 'failed', error: error.message }
            }
          }),
        )
        const intro = `The user's message links to ${pages.length === 1 ? 'this page' : 'these pages'}, fetched for you just now. Use them to answer, and cite the URLs you rely on.`
        request.body = { ...request.body, input: withContextMessage(request.body.input, last.index, `${intro}\n\n${pages.map((page) => page.text).join('\n\n---\n\n')}`) }
        const fetched = pages.filter((page) => page.status === 'fetched').length
        recordStage(request, ID, `fetched ${fetched} of ${pages.length} linked page${pages.length === 1 ? '' : 's'}` + (urls.length > chosen.length ? ` (${urls.length - chosen.length} more over max_uses)` : ''), {
          fetched: pages.map((page) => ({ url: page.url, status: page.status, ...(page.error ? { error: page.error } : {}) })),
          ...(urls.length > chosen.length ? { not_fetched: urls.slice(chosen.length) } : {}),
        })
      },
      afterWhole: (result) => withWebFindings(result, findings),
      onStreamEvent: (event) => addWebFindings(event, findings),
    }
  },
}
