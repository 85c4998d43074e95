/**
 * Refreshed prices: a price document the operator controls (a file the runner reads, an HTTPS URL, or any
 * loader an embedder gives), validated and applied over the catalog without a restart. A document that
 * cannot be read or is invalid changes nothing: the previous prices stay and a warning is logged
 * (docs/decisions.md, "Model catalog").
 */

import type { Logger } from '../core/logger'
import { parseInput } from '../core/validation'
import { UnknownPriceTargetError, type ModelCatalog } from './models'
import { isDeclaredOver, readBodyText, UpstreamTooLargeSignal } from '../transport/contract'
import { PriceDocumentSchema } from './prices.schemas'

export interface PriceSourceOptions {
  /**
   * Where the document is served: `https://…`, or `http://` on a loopback host only (prices read in plain text
   * from elsewhere could be altered on the way). Operator configuration, not caller input: it is fetched
   * without the upstream guard, but never follows a redirect and is bounded by `timeoutMs` and `maxBytes`.
   */
  url?: string
  /** Reads the document (its parsed JSON); for files, secret stores, anything the embedder reaches. */
  load?: () => Promise<unknown>
  /** How the source is named in logs (default: the URL without its query, or `loader`). */
  label?: string
  /** Reload every so many seconds; default 3600 for a URL, never for a loader. `false` turns it off. */
  refreshSeconds?: number | false
  /** How long one fetch of `url` may take (default 10 000 ms). */
  timeoutMs?: number
  /** The largest document accepted (default 4 MiB). */
  maxBytes?: number
}

export type PriceReloadResult =
  | { ok: true; overrides: number; revision: number }
  | { ok: false; error: string }

export const PRICE_FETCH_TIMEOUT_MS = 10_000
export const PRICE_DOCUMENT_MAX_BYTES = 4 * 1024 * 1024
const URL_REFRESH_SECONDS = 3_600

const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i

/** Whether `url` may serve prices: HTTPS anywhere, plain HTTP on loopback only. */
export const isPriceSourceUrl = (url: string): boolean => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return false
  }
  return parsed.protocol === 'https:' || (parsed.protocol === 'http:' && LOOPBACK_HOST.test(parsed.hostname))
}

// The query and user info may hold the operator's token: logs get the origin and path only.
const describeUrl = (url: string): string => {
  const parsed = new URL(url)
  return `${parsed.origin}${parsed.pathname}`
}

/** A source that cannot be read; its message is logged, so it names the problem and never a secret. */
export class PriceSourceError extends Error {
  override name = 'PriceSourceError'
}

/** The body as text, refused as soon as it (or its declared length) passes `maxBytes`: the transport's capped reader. */
const readCapped = async (response: Response, maxBytes: number): Promise<string> => {
  const tooLarge = () => new PriceSourceError(`the document is larger than ${maxBytes} bytes`)
  if (isDeclaredOver(response.headers.get('content-length'), maxBytes)) {
    await response.body?.cancel().catch(() => {})
    throw tooLarge()
  }
  if (!response.body) return ''
  try {
    return await readBodyText(response.body as unknown as AsyncIterable<Uint8Array>, maxBytes)
  } catch (error) {
    if (!(error instanceof UpstreamTooLargeSignal)) throw error
    await response.body.cancel().catch(() => {})
    throw tooLarge()
  }
}

const fetchDocument = async (url: string, timeoutMs: number, maxBytes: number): Promise<unknown> => {
  let response: Response
  try {
    response = await fetch(url, { redirect: 'manual', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) })
  } catch (error) {
    const isTimeout = (error as Error).name === 'TimeoutError'
    throw new PriceSourceError(isTimeout ? `no answer within ${timeoutMs} ms` : 'the request failed')
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => {})
    // A redirect is refused, not followed: the operator configured this location, not wherever it points.
    throw new PriceSourceError(response.status >= 300 && response.status < 400 ? `answered ${response.status}, a redirect, which is not followed` : `answered ${response.status}`)
  }
  let text: string
  try {
    text = await readCapped(response, maxBytes)
  } catch (error) {
    if (error instanceof PriceSourceError) throw error
    throw new PriceSourceError((error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : 'the answer could not be read')
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new PriceSourceError('the answer is not JSON')
  }
}

const reasonOf = (error: unknown): string => {
  if (error instanceof PriceSourceError || error instanceof UnknownPriceTargetError) return error.message
  // Validation names the path and the rule, never the value (core/validation.ts).
  if (error instanceof Error && /^input[.:]/.test(error.message)) return `document${error.message.slice('input'.length)}`
  return 'the loader failed'
}

export interface PriceRefresher {
  /** Loads the document and applies it; settles once applied or refused. Loads run one at a time, in call order. */
  reload(): Promise<PriceReloadResult>
  /** The first load, started when the refresher is created. */
  readonly ready: Promise<PriceReloadResult>
  /** Stops the periodic reload. */
  stop(): void
}

/** Loads prices from `source` now, then on its interval; `createGateway` makes one when `priceSource` is set. */
export const createPriceRefresher = (catalog: ModelCatalog, source: PriceSourceOptions, logger: Logger): PriceRefresher => {
  const label = source.label ?? (source.url ? describeUrl(source.url) : 'loader')
  const timeoutMs = source.timeoutMs ?? PRICE_FETCH_TIMEOUT_MS
  const maxBytes = source.maxBytes ?? PRICE_DOCUMENT_MAX_BYTES
  const read = source.load ?? (() => fetchDocument(source.url!, timeoutMs, maxBytes))

  const loadOnce = async (): Promise<PriceReloadResult> => {
    try {
      const document = parseInput(PriceDocumentSchema, await read(), 'input')
      catalog.reprice(document.prices, 'document.prices')
      logger.info('prices refreshed', { source: label, overrides: document.prices.length, revision: catalog.revision })
      return { ok: true, overrides: document.prices.length, revision: catalog.revision }
    } catch (error) {
      const reason = reasonOf(error)
      logger.warn('price refresh failed; the previous prices stay', { source: label, reason })
      return { ok: false, error: reason }
    }
  }

  let queue: Promise<unknown> = Promise.resolve()
  const reload = (): Promise<PriceReloadResult> => {
    const next = queue.then(loadOnce)
    queue = next
    return next
  }

  const seconds = source.refreshSeconds ?? (source.url ? URL_REFRESH_SECONDS : false)
  const timer = seconds === false ? undefined : setInterval(() => void reload(), seconds * 1000)
  // A refresh timer alone must not keep a Node process alive.
  ;(timer as { unref?: () => void } | undefined)?.unref?.()

  return {
    reload,
    ready: reload(),
    stop: () => clearInterval(timer),
  }
}
