/**
 * The operator's settings for plugins (`createGateway({ plugins })`), built once with the inference service:
 * where moderation asks (an OpenAI-compatible `/moderations` API), and how PDFs are read (size and page caps, OCR
 * backends). Secrets here are never logged.
 */

import type { UpstreamTarget } from '../../providers/contract'
import type { ProviderRegistry } from '../../engine/providers'
import { inProcessPdfExtractor, type PdfTextExtractor } from './pdf-text'

export interface ModerationOptions {
  /** An OpenAI-compatible API root (default `https://api.openai.com/v1`); `/moderations` is appended. */
  baseURL?: string
  /** The key sent as `Authorization: Bearer`. Never logged. */
  apiKey: string
  /** Default `omni-moderation-latest`. */
  model?: string
  /** The name the 403 reports as `provider_name` (default `openai`). */
  providerName?: string
}

/** An OCR service for the file-parser's `mistral-ocr` and `cloudflare-ai` engines: a PDF in, each page's text out. */
export type PdfOcrBackend = (pdf: Uint8Array, context: { filename: string | undefined; signal: AbortSignal }) => Promise<{ pages: string[] }>

/** How the gateway's default extractor runs PDFs on worker threads (docs/decisions.md, "No tenant can stall the gateway"). */
export interface FileParserWorkerOptions {
  /** Worker threads at most (default: the cores less one, between 1 and 4). */
  threads?: number
  /** Heap of one worker in MiB (default 128); a PDF that needs more is refused with 413. */
  heapMb?: number
  /** PDFs waiting for a free worker at most (default 4 per thread); past it, 503 with `Retry-After`. */
  maxQueued?: number
  /** Milliseconds a PDF waits for a free worker at most (default 5 000); then 503 with `Retry-After`. */
  queueTimeoutMs?: number
}

export interface FileParserOptions {
  /** Bytes of one PDF read at most (default 10 MiB); a larger file is refused. */
  maxBytes?: number
  /** Pages of one PDF extracted at most (default 100); a longer one is refused. */
  maxPages?: number
  /** Characters of text taken from one PDF at most (default 1 Mi); a PDF with more is refused (413). */
  maxCharacters?: number
  /** Bytes one PDF's compressed streams may inflate to (default 32 MiB); a PDF bomb is refused (413) before it is read. */
  maxDecompressedBytes?: number
  /** Milliseconds reading one PDF may take (default 20 000); past it its worker is stopped and the PDF refused (413). */
  timeoutMs?: number
  /**
   * Worker threads for reading PDFs: on by default where the runtime has `node:worker_threads` (Node, Bun, Deno).
   * `false` reads them in the gateway's own thread, where a slow PDF holds up every other request.
   */
  workers?: FileParserWorkerOptions | false
  /** Reads a PDF's text instead of the built-in extractor (the limits above are passed to it). */
  extractor?: PdfTextExtractor
  /** OCR backends by engine id; an engine without one is refused by name. */
  ocr?: { 'mistral-ocr'?: PdfOcrBackend; 'cloudflare-ai'?: PdfOcrBackend }
}

export interface PluginOptions {
  /**
   * The moderation plugin's API. When absent, the `openai` provider's shared key and base URL are used if the
   * operator configured one; otherwise the plugin is refused (400).
   */
  moderation?: ModerationOptions
  fileParser?: FileParserOptions
}

export interface ModerationSettings {
  target: UpstreamTarget
  model: string
  providerName: string
}

export interface PluginSettings {
  moderation: ModerationSettings | undefined
  fileParser: {
    maxBytes: number
    maxPages: number
    maxCharacters: number
    maxDecompressedBytes: number
    timeoutMs: number
    extractor: PdfTextExtractor
    ocr: Partial<Record<'mistral-ocr' | 'cloudflare-ai', PdfOcrBackend>>
  }
}

export const FILE_PARSER_DEFAULTS = {
  maxBytes: 10 * 1024 * 1024,
  maxPages: 100,
  maxCharacters: 1_048_576,
  maxDecompressedBytes: 32 * 1024 * 1024,
  timeoutMs: 20_000,
} as const

export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest'

const moderationSettings = (options: ModerationOptions | undefined, providers: ProviderRegistry): ModerationSettings | undefined => {
  if (options) {
    return {
      target: { baseURL: (options.baseURL ?? 'https://api.openai.com/v1').replace(/\/+$/, ''), apiKey: options.apiKey },
      model: options.model ?? DEFAULT_MODERATION_MODEL,
      providerName: options.providerName ?? 'openai',
    }
  }
  const openai = providers.get('openai')
  if (!openai?.shared || openai.descriptor.id !== 'openai') return undefined
  return { target: { baseURL: openai.shared.baseURL, apiKey: openai.shared.apiKey }, model: DEFAULT_MODERATION_MODEL, providerName: 'openai' }
}

export const createPluginSettings = (options: PluginOptions = {}, providers: ProviderRegistry): PluginSettings => ({
  moderation: moderationSettings(options.moderation, providers),
  fileParser: {
    maxBytes: options.fileParser?.maxBytes ?? FILE_PARSER_DEFAULTS.maxBytes,
    maxPages: options.fileParser?.maxPages ?? FILE_PARSER_DEFAULTS.maxPages,
    maxCharacters: options.fileParser?.maxCharacters ?? FILE_PARSER_DEFAULTS.maxCharacters,
    maxDecompressedBytes: options.fileParser?.maxDecompressedBytes ?? FILE_PARSER_DEFAULTS.maxDecompressedBytes,
    timeoutMs: options.fileParser?.timeoutMs ?? FILE_PARSER_DEFAULTS.timeoutMs,
    // The composition root passes its worker pool here; the engine alone knows only the in-process reader.
    extractor: options.fileParser?.extractor ?? inProcessPdfExtractor,
    ocr: { ...options.fileParser?.ocr },
  },
})
