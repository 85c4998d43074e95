/**
 * The upstream providers modelgate ships: with those the operator configures, the providers routing,
 * BYOK `provider` slugs and `GET /providers` know. Base URLs are defaults only; configuration may point
 * any of them at a self-hosted, regional or Azure endpoint.
 */

/** The wire formats modelgate ships an adapter for (src/providers/index.ts): the one list options are checked against. */
export const PROVIDER_APIS = ['openai-responses', 'openai-chat', 'azure-openai', 'anthropic-messages', 'gemini'] as const

/** The wire format a provider speaks upstream. */
export type ProviderApi = (typeof PROVIDER_APIS)[number]

export interface ProviderDescriptor {
  /** Lowercase slug, as in BYOK `provider` and routing preferences (docs/decisions.md, BYOK). */
  id: string
  displayName: string
  api: ProviderApi
  /** Default base URL; empty where every account has its own (Azure). */
  baseURL: string
  /** Adapter settings this provider needs by default (configuration may override each). */
  options?: Record<string, string>
}

const provider = (id: string, displayName: string, api: ProviderApi, baseURL: string, options?: Record<string, string>): ProviderDescriptor => ({
  id,
  displayName,
  api,
  baseURL,
  ...(options ? { options } : {}),
})

/** Every provider with a built-in wire format. OpenAI-compatible ones speak Chat Completions. */
export const BUILT_IN_PROVIDERS: readonly ProviderDescriptor[] = [
  provider('openai', 'OpenAI', 'openai-responses', 'https://api.openai.com/v1'),
  provider('azure', 'Azure OpenAI', 'azure-openai', ''),
  provider('anthropic', 'Anthropic', 'anthropic-messages', 'https://api.anthropic.com/v1'),
  provider('google-ai-studio', 'Google AI Studio', 'gemini', 'https://generativelanguage.googleapis.com/v1beta'),
  provider('groq', 'Groq', 'openai-chat', 'https://api.groq.com/openai/v1'),
  provider('together', 'Together', 'openai-chat', 'https://api.together.xyz/v1', { topK: 'true' }),
  provider('fireworks', 'Fireworks', 'openai-chat', 'https://api.fireworks.ai/inference/v1', { topK: 'true' }),
  provider('deepinfra', 'DeepInfra', 'openai-chat', 'https://api.deepinfra.com/v1/openai', { topK: 'true' }),
  // Mistral rejects fields it does not know.
  provider('mistral', 'Mistral', 'openai-chat', 'https://api.mistral.ai/v1', { omitFields: 'user,stream_options' }),
  provider('xai', 'xAI', 'openai-chat', 'https://api.x.ai/v1'),
  // Thinking models want their reasoning back during tool-calling turns.
  provider('deepseek', 'DeepSeek', 'openai-chat', 'https://api.deepseek.com/v1', { reasoningField: 'reasoning_content' }),
  provider('cerebras', 'Cerebras', 'openai-chat', 'https://api.cerebras.ai/v1'),
  provider('perplexity', 'Perplexity', 'openai-chat', 'https://api.perplexity.ai'),
  provider('sambanova', 'SambaNova', 'openai-chat', 'https://api.sambanova.ai/v1'),
  provider('nebius', 'Nebius', 'openai-chat', 'https://api.studio.nebius.com/v1'),
  provider('novita', 'Novita', 'openai-chat', 'https://api.novita.ai/v3/openai'),
  provider('moonshotai', 'Moonshot AI', 'openai-chat', 'https://api.moonshot.ai/v1', { reasoningField: 'reasoning_content' }),
  provider('z-ai', 'Z.AI', 'openai-chat', 'https://api.z.ai/api/paas/v4'),
  provider('alibaba', 'Alibaba Cloud', 'openai-chat', 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1'),
  provider('siliconflow', 'SiliconFlow', 'openai-chat', 'https://api.siliconflow.com/v1'),
  provider('nvidia', 'NVIDIA', 'openai-chat', 'https://integrate.api.nvidia.com/v1'),
  provider('featherless', 'Featherless', 'openai-chat', 'https://api.featherless.ai/v1'),
  provider('chutes', 'Chutes', 'openai-chat', 'https://llm.chutes.ai/v1'),
  provider('parasail', 'Parasail', 'openai-chat', 'https://api.parasail.io/v1'),
  provider('friendli', 'Friendli', 'openai-chat', 'https://api.friendli.ai/serverless/v1'),
  provider('inference-net', 'Inference.net', 'openai-chat', 'https://api.inference.net/v1'),
]

/**
 * The environment variables that conventionally hold a provider's key. The runner reads them at start, and
 * "no key" errors name them, so operators see the variable they would set.
 */
export const CONVENTIONAL_KEY_VARIABLES: Readonly<Record<string, readonly string[]>> = {
  openai: ['OPENAI_API_KEY'],
  anthropic: ['ANTHROPIC_API_KEY'],
  'google-ai-studio': ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
  groq: ['GROQ_API_KEY'],
  together: ['TOGETHER_API_KEY'],
  fireworks: ['FIREWORKS_API_KEY'],
  deepinfra: ['DEEPINFRA_API_KEY'],
  mistral: ['MISTRAL_API_KEY'],
  xai: ['XAI_API_KEY'],
  deepseek: ['DEEPSEEK_API_KEY'],
  cerebras: ['CEREBRAS_API_KEY'],
  perplexity: ['PERPLEXITY_API_KEY'],
}

/** `MODELGATE_PROVIDER_<ID>_<SETTING>`, where the runner reads any provider's settings (`my-vllm` → `MY_VLLM`). */
const providerVariable = (id: string, setting: 'API_KEY' | 'BASE_URL' | 'API'): string =>
  `MODELGATE_PROVIDER_${id.toUpperCase().replaceAll('-', '_')}_${setting}`

/** The variable to name when a provider has no key: its conventional one, else the runner's generic one. */
export const keyVariable = (id: string): string => CONVENTIONAL_KEY_VARIABLES[id]?.[0] ?? providerVariable(id, 'API_KEY')

/** spec BYOK `provider`: lowercase letters, digits, hyphens, optionally one `/` segment (an endpoint variant). */
export const PROVIDER_SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*(?:\/[a-z0-9]+(?:-[a-z0-9]+)*)?$/
