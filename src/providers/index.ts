/** The adapter for each wire format. Providers (catalog.ts or configuration) name their format. */

import type { ProviderApi } from './catalog'
import type { ProviderAdapter } from './contract'
import { anthropicAdapter } from './anthropic'
import { geminiAdapter } from './gemini'
import { azureOpenAIAdapter, openAIChatAdapter } from './openai-chat'
import { openAIResponsesAdapter } from './openai-responses'

export const ADAPTERS: Record<ProviderApi, ProviderAdapter> = {
  'openai-responses': openAIResponsesAdapter,
  'openai-chat': openAIChatAdapter,
  'azure-openai': azureOpenAIAdapter,
  'anthropic-messages': anthropicAdapter,
  gemini: geminiAdapter,
}
