/**
 * The Chat Completions adapters: `openAIChatAdapter` for OpenAI and the compatible family
 * (`POST {baseURL}/chat/completions`, `Authorization: Bearer`), and `azureOpenAIAdapter` for Azure
 * OpenAI (`api-key` header, deployment or v1 URLs, see ./azure). `target.options` keys are
 * documented in ./options (`dialect`, `developerRole`, `maxTokensField`, `topK`, `omitFields`,
 * `reasoningField`) and ./azure (`resourceName`, `resourceType`, `deployment`, `apiVersion`).
 */

import { azureCredentialFormat } from '../azure/credential-format'
import type { ProviderAdapter, UpstreamCall, UpstreamRequest, UpstreamTarget } from '../contract'
import { openAIEmbeddings } from '../shared/openai-embeddings'
import type { RequestExtensionName } from '../types'
import { resolveAzureEndpoint } from './azure'
import { toChatError } from './errors'
import { readChatSettings } from './options'
import { buildChatBody } from './request'
import { readChatResult } from './result'
import { readChatStream } from './stream'

const headersFor = (call: UpstreamCall, target: UpstreamTarget, auth: Record<string, string>): Record<string, string> => ({
  'content-type': 'application/json',
  accept: call.stream ? 'text/event-stream' : 'application/json',
  ...auth,
  ...target.headers,
})

/** Every extension has a Chat Completions field (request.ts). */
const CHAT_EXTENSIONS: readonly RequestExtensionName[] = ['stop', 'seed', 'logprobs', 'logit_bias']

/** Translates Responses calls to OpenAI-compatible Chat Completions and back. */
export const openAIChatAdapter: ProviderAdapter = {
  contractVersion: 1,
  // Chat Completions `file` parts carry inline data only (request.ts).
  pdfInput: { fileData: true, fileUrl: false },
  api: 'openai-chat',
  requestExtensions: CHAT_EXTENSIONS,
  buildRequest(call, target): UpstreamRequest {
    const body = buildChatBody(call, readChatSettings(target, false), 'Chat Completions')
    return {
      url: `${target.baseURL}/chat/completions`,
      method: 'POST',
      // Self-hosted servers (vLLM, Ollama) may run keyless: then no Authorization at all.
      headers: headersFor(call, target, target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}),
      body: JSON.stringify(body),
    }
  },
  readResult: readChatResult,
  readStream: readChatStream,
  toError: toChatError,
  embeddings: openAIEmbeddings,
}

/** Translates Responses calls to Azure OpenAI Chat Completions and back. */
export const azureOpenAIAdapter: ProviderAdapter = {
  contractVersion: 1,
  // Chat Completions `file` parts carry inline data only (request.ts).
  pdfInput: { fileData: true, fileUrl: false },
  api: 'azure-openai',
  requestExtensions: CHAT_EXTENSIONS,
  // A BYOK key is a JSON list of resources and deployments (../azure/credentials).
  credential: azureCredentialFormat,
  // Azure serves OpenAI's models.
  promptTokenizer: 'o200k_base',
  buildRequest(call, target): UpstreamRequest {
    const endpoint = resolveAzureEndpoint(call, target)
    const body = buildChatBody(call, readChatSettings(target, true), 'Azure OpenAI')
    body.model = endpoint.model
    return {
      url: endpoint.url,
      method: 'POST',
      headers: headersFor(call, target, { 'api-key': endpoint.apiKey }),
      body: JSON.stringify(body),
      ...(endpoint.callerDestination ? { callerDestination: endpoint.callerDestination } : {}),
    }
  },
  readResult: readChatResult,
  readStream: readChatStream,
  toError: toChatError,
}
