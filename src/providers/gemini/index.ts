/**
 * The Google Gemini adapter (Generative Language API, `generateContent` and
 * `streamGenerateContent?alt=sse`, key in `x-goog-api-key`). Mapping decisions are documented in
 * request.ts, input.ts, media.ts, thinking.ts, output.ts and errors.ts.
 */

import type { ProviderAdapter } from '../contract'
import { geminiEmbeddings } from './embeddings'
import { toGeminiError } from './errors'
import { buildGeminiRequest } from './request'
import { readGeminiResult } from './result'
import { readGeminiStream } from './stream'

export const geminiAdapter: ProviderAdapter = {
  contractVersion: 1,
  pdfInput: { fileData: true, fileUrl: true },
  api: 'gemini',
  // Log probabilities (`responseLogprobs`) and logit bias are not translated.
  requestExtensions: ['stop', 'seed'],
  // Google Search grounding has no settings: no domain lists, location, context size or use limit (grounding.ts).
  nativeWebSearch: [],
  buildRequest: buildGeminiRequest,
  readResult: readGeminiResult,
  readStream: readGeminiStream,
  toError: toGeminiError,
  embeddings: geminiEmbeddings,
}
