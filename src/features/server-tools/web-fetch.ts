/**
 * `service:web_fetch`: the gateway fetches a URL the model chose and gives it the page's readable text. The URL is
 * the caller's (through their model), so every hop passes the SSRF guard (docs/decisions.md, Upstream I/O and
 * Server tools): http or https on the default port, a DNS name resolving to public addresses only (checked where
 * the connection is made, or just before it), redirects followed by hand and each one checked again, the bytes
 * read and the time taken capped.
 */

import * as v from 'valibot'
import { DestinationRefusedError, type CallerDestination } from '../../core/upstream-guard'
import { checkCallerDestination } from '../../engine/destination'
import type { InferenceService } from '../../engine/service'
import { UpstreamTimeoutSignal, type UpstreamResponse } from '../../transport/contract'
import { ServerToolFailure, ServerToolRefusal, historyPair, type ServerTool } from './contract'
import { DomainListSchema, domainRefusal } from './domains'
import { integer } from '../../core/validation'
import { isGatewayError } from '../../core/errors'
import type { PageTextOutcome } from './page-text'

/** Pages are anywhere on the public web: no suffix to be under. */
const WEB_DESTINATION: CallerDestination = { family: 'web', hostSuffixes: [] }

/** Roughly four characters a token, the usual rule of thumb for English text. */
const CHARACTERS_PER_TOKEN = 4
const DEFAULT_MAX_CONTENT_TOKENS = 10_000

export const WebFetchToolSchema = v.strictObject({
  type: v.literal('service:web_fetch'),
  parameters: v.optional(
    v.strictObject({
      // The gateway fetches pages itself: `service` (OpenRouter's `openrouter`) and `auto`, which means it here.
      engine: v.optional(v.picklist(['auto', 'service'], 'must be "auto" or "service": this gateway fetches pages itself')),
      max_uses: v.optional(integer(1, 100)),
      max_content_tokens: v.optional(integer(100, 1_000_000)),
      allowed_domains: v.optional(DomainListSchema),
      blocked_domains: v.optional(DomainListSchema),
    }),
  ),
})

const CallSchema = v.object({ url: v.string() })

const isRedirect = (status: number) => status === 0 || (status >= 300 && status < 400)

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|x-ndjson)|application\/[\w.+-]+\+(json|xml))/

interface FetchedPage {
  url: URL
  status: number
  contentType: string
  body: string
}

/** Reads at most `maxBytes` of the body as UTF-8 and ends the exchange; a page is cut, never refused, for its size. */
const readUpTo = async (response: UpstreamResponse, maxBytes: number): Promise<string> => {
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  try {
    for await (const chunk of response.body) {
      const room = maxBytes - size
      size += chunk.byteLength
      text += decoder.decode(room < chunk.byteLength ? chunk.subarray(0, room) : chunk, { stream: true })
      if (size >= maxBytes) break
    }
  } finally {
    await response.cancel()
  }
  return text + decoder.decode()
}

/**
 * Fetches `start` for a caller, following redirects by hand, each hop checked by `isAllowed` and the SSRF guard,
 * the whole within the web fetch's time limit; `read` takes the body of a final answer below 400. Failures are
 * `ServerToolFailure`s whose message is safe to show. The file-parser plugin fetches PDFs through it too.
 */
export const fetchGuarded = async <Body>(
  service: InferenceService,
  start: URL,
  signal: AbortSignal,
  isAllowed: (url: URL) => string | undefined,
  read: (response: UpstreamResponse) => Promise<Body>,
): Promise<{ url: URL; status: number; contentType: string; body: Body | undefined }> => {
  const settings = service.serverTools.webFetch
  const { guard } = settings
  // One deadline for the whole fetch, redirects and body included.
  const controller = new AbortController()
  const onAbort = () => controller.abort(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(() => controller.abort(new UpstreamTimeoutSignal('total')), settings.timeoutMs)
  const timeouts = {
    connectMs: Math.min(service.timeouts.connectMs, settings.timeoutMs),
    firstByteMs: settings.timeoutMs,
    idleMs: Math.min(service.timeouts.idleMs, settings.timeoutMs),
    totalMs: settings.timeoutMs,
  }
  try {
    let url = start
    for (let hop = 0; ; hop++) {
      const refusal = isAllowed(url)
      if (refusal) throw new ServerToolFailure(hop === 0 ? refusal : `the page redirected to a URL not allowed: ${refusal}`, { details: { url: url.href } })
      await checkCallerDestination(url.href, WEB_DESTINATION, guard, service.transport)
      const response = await service.transport(
        {
          url: url.href,
          method: 'GET',
          headers: { accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5', 'user-agent': settings.userAgent },
          body: '',
          callerDestination: WEB_DESTINATION,
        },
        { signal: controller.signal, timeouts, guard },
      )
      if (!isRedirect(response.status)) {
        const contentType = (response.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase()
        const body = response.status < 400 ? await read(response) : (await response.cancel(), undefined)
        return { url, status: response.status, contentType, body }
      }
      const location = response.headers.get('location')
      await response.cancel()
      if (!location || response.status === 0) throw new ServerToolFailure('the page redirected without saying where to', { details: { url: url.href, httpStatus: response.status } })
      if (hop >= settings.maxRedirects) throw new ServerToolFailure(`the page redirected more than ${settings.maxRedirects} times`, { details: { url: url.href } })
      url = new URL(location, url)
    }
  } catch (error) {
    if (signal.aborted || error instanceof ServerToolFailure) throw error
    if (error instanceof DestinationRefusedError) throw new ServerToolFailure(`the URL is not allowed: ${error.reason}`, { details: { url: start.href } })
    if (controller.signal.reason instanceof UpstreamTimeoutSignal || error instanceof UpstreamTimeoutSignal) {
      throw new ServerToolFailure(`the page did not answer within ${settings.timeoutMs} ms`, { details: { url: start.href } })
    }
    throw new ServerToolFailure('the page could not be reached', { cause: error, details: { url: start.href } })
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
}

const fetchPage = async (service: InferenceService, start: URL, signal: AbortSignal, isAllowed: (url: URL) => string | undefined): Promise<FetchedPage> => {
  const page = await fetchGuarded(service, start, signal, isAllowed, (response) => readUpTo(response, service.serverTools.webFetch.maxBytes))
  return { ...page, body: page.body ?? '' }
}

const toText = async (service: InferenceService, page: FetchedPage, signal: AbortSignal): Promise<{ title: string; text: string }> => {
  if (page.contentType === 'text/html' || page.contentType === 'application/xhtml+xml' || page.contentType === '') {
    const details = { details: { url: page.url.href, httpStatus: page.status } }
    let outcome: PageTextOutcome
    try {
      outcome = await service.serverTools.webFetch.readPageText(page.body, signal)
    } catch (error) {
      // Every document reader busy (503): the model hears the page could not be read now, the request goes on.
      if (isGatewayError(error) && error.status === 503) throw new ServerToolFailure(`the page could not be read now: ${error.message}`, details)
      throw error
    }
    if (outcome.ok) return outcome.page
    const why = outcome.limit === 'time' ? 'took longer to read than a page may' : outcome.limit === 'memory' ? 'needs more memory to read than a page may have' : 'could not be read'
    throw new ServerToolFailure(`the page ${why}`, details)
  }
  if (TEXT_TYPES.test(page.contentType)) return { title: '', text: page.body }
  throw new ServerToolFailure(`the page is ${page.contentType}, which is not text`, { details: { url: page.url.href, httpStatus: page.status } })
}

export const webFetchTool = (tool: v.InferOutput<typeof WebFetchToolSchema>): ServerTool => {
  const parameters = tool.parameters ?? {}
  const maxCharacters = (parameters.max_content_tokens ?? DEFAULT_MAX_CONTENT_TOKENS) * CHARACTERS_PER_TOKEN
  const isAllowed = (url: URL) => domainRefusal(url, parameters.allowed_domains, parameters.blocked_domains)
  let uses = 0
  const failed = (id: string, error: string, details: Record<string, unknown> = {}) => ({ type: 'service:web_fetch', id, status: 'incomplete', ...details, error })
  return {
    type: tool.type,
    itemIdPrefix: 'wf',
    itemType: 'service:web_fetch',
    definition: {
      type: 'function',
      name: 'service_web_fetch',
      description:
        'Fetches a web page (http or https) and returns its readable text. Use it to read a page whose URL you know, such as a search result.' +
        (parameters.allowed_domains ? ` Only these domains can be fetched: ${parameters.allowed_domains.join(', ')}.` : ''),
      parameters: {
        type: 'object',
        properties: { url: { type: 'string', description: 'The absolute URL of the page' } },
        required: ['url'],
        additionalProperties: false,
      },
    },
    pendingItem: (id) => ({ type: 'service:web_fetch', id, status: 'in_progress' }),
    failedItem: (id, message, details) => failed(id, message, details),
    toHistory(item) {
      const url = typeof item.url === 'string' ? item.url : ''
      const output =
        item.status === 'completed' && typeof item.content === 'string'
          ? `URL: ${url}\nTitle: ${typeof item.title === 'string' ? item.title : ''}\n\n${item.content}`
          : `Error: ${typeof item.error === 'string' ? item.error : 'not fetched'}`
      return historyPair(item, 'service_web_fetch', { url }, output)
    },
    async run(call, context) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('url must be a string')
      let url: URL
      try {
        url = new URL(parsed.output.url)
      } catch {
        throw new ServerToolRefusal('url must be an absolute http or https URL')
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ServerToolRefusal('url must be an absolute http or https URL')
      if (parameters.max_uses !== undefined && uses >= parameters.max_uses) throw new ServerToolRefusal(`this request may fetch at most ${parameters.max_uses} pages (max_uses)`)
      const refusal = isAllowed(url)
      if (refusal) throw new ServerToolRefusal(refusal)
      uses++
      const page = await fetchPage(context.service, url, context.signal, isAllowed)
      if (page.status >= 400) throw new ServerToolFailure(`the page answered HTTP ${page.status}`, { details: { url: page.url.href, httpStatus: page.status } })
      const { title, text } = await toText(context.service, page, context.signal)
      const content = text.length > maxCharacters ? `${text.slice(0, maxCharacters)}\n[… cut at ${maxCharacters / CHARACTERS_PER_TOKEN} tokens]` : text
      return {
        output: `URL: ${page.url.href}\nTitle: ${title}\n\n${content}`,
        item: { type: 'service:web_fetch', id: call.itemId, status: 'completed', url: page.url.href, title, content, httpStatus: page.status },
        sources: [{ url: page.url.href, title }],
      }
    },
  }
}
