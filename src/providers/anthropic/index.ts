/**
 * The Anthropic Messages adapter (`POST {baseURL}/messages`, `x-api-key`, `anthropic-version`).
 * `target.options` keys are documented in ./request (`defaultMaxTokens`, `thinking`,
 * `structuredOutputs`); `anthropic-beta` and other extra headers come from `target.headers`.
 */

import type { ProviderAdapter } from '../contract'
import { toAnthropicError } from './errors'
import { buildMessagesRequest } from './request'
import { readMessagesResult } from './result'
import { readMessagesStream } from './stream'

/** Translates Responses calls to Anthropic's Messages API and back. */
export const anthropicAdapter: ProviderAdapter = {
  contractVersion: 1,
  pdfInput: { fileData: true, fileUrl: true },
  api: 'anthropic-messages',
  // Anthropic has no seed, log probabilities or logit bias.
  requestExtensions: ['stop'],
  // Claude's `web_search_20250305` takes everything but a context size (web-search.ts).
  nativeWebSearch: ['max_uses', 'allowed_domains', 'blocked_domains', 'domain_paths', 'user_location'],
  // The Messages API refuses more than 1,000 messages.
  maxInputMessages: 1_000,
  // Claude caches a prompt only up to a `cache_control` breakpoint (request.ts).
  cachesOnlyMarkedPrompts: true,
  buildRequest: buildMessagesRequest,
  readResult: readMessagesResult,
  readStream: readMessagesStream,
  toError: toAnthropicError,
}
