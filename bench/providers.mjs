// @ts-check
/**
 * The providers and the one extra model every modelgate column is configured with, whether `createGateway` takes
 * them (bench/gateway.mjs) or the runner reads them from its config file (bench/runner.ts): `openai` (Responses
 * wire, model `openai/gpt-4.1`) and `groq` (Chat Completions wire, model `bench/chat-model`, which modelgate
 * translates to and from Responses), both pointed at the loopback upstream.
 */

/** The key the upstream is sent; it checks none. */
export const UPSTREAM_KEY = 'sk-bench-0123456789abcdef'

/** @param {string} upstreamUrl */
export const benchProviders = (upstreamUrl) => ({
  openai: { baseURL: upstreamUrl, apiKey: UPSTREAM_KEY },
  groq: { baseURL: upstreamUrl, apiKey: UPSTREAM_KEY },
})

/** One endpoint only, so no request of the translated phases is routed anywhere else. */
export const BENCH_MODELS = [
  {
    slug: 'bench/chat-model',
    name: 'Bench model on a Chat Completions upstream',
    endpoints: [{ provider: 'groq', model: 'gpt-4.1-mini', contextLength: 1_047_576, pricing: { prompt: 0.4e-6, completion: 1.6e-6 } }],
  },
]
