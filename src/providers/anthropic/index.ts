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
  buildRequest: buildMessagesRequest,
  readResult: readMessagesResult,
  readStream: readMessagesStream,
  toError: toAnthropicError,
}
