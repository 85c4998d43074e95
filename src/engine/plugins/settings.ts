/**
 * The operator's settings for plugins (`createGateway({ plugins })`), built once with the inference service:
 * where moderation asks (an OpenAI-compatible `/moderations` API), and how PDFs are read (size and page caps, OCR
 * backends). Secrets here are never logged.
 */

import type { UpstreamTarget } from '../../providers/contract'
import type { ProviderRegistry } from '../providers'

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

export interface FileParserOptions {
  /** Bytes of one PDF read at most (default 10 MiB); a larger file is refused. */
  maxBytes?: number
  /** Pages of one PDF extracted at most (default 100); a longer one is refused. */
  maxPages?: number
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
  fileParser: { maxBytes: number; maxPages: number; ocr: Partial<Record<'mistral-ocr' | 'cloudflare-ai', PdfOcrBackend>> }
}

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
    maxBytes: options.fileParser?.maxBytes ?? 10 * 1024 * 1024,
    maxPages: options.fileParser?.maxPages ?? 100,
    ocr: { ...options.fileParser?.ocr },
  },
})
