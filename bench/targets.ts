/**
 * What the bench sends load to. Every target reaches the same loopback upstream, so their columns differ
 * only by what sits in front of it. Each target says how it is called for each route a phase takes: the
 * Responses phases, the translated ones (Responses client, Chat Completions upstream) and the Chat Completions
 * ones (Chat Completions client and upstream).
 */

import type { Expectation } from './load'
import { startServer, type ServerProcess } from './processes'
import { UPSTREAM_KEY } from './providers.mjs'
import type { PhaseId } from './results'

/** The wire the loopback upstream answers in a phase (bench/upstream.mjs). */
export type UpstreamWire = 'responses' | 'chat'

/**
 * The way a phase calls a target: `responses` and `chat` name the upstream's wire while the client speaks
 * Responses to a gateway; `chat-completions` is a Chat Completions client in front of the chat upstream;
 * `cache-hit` is the Responses request again, which modelgate is asked to answer from its response cache.
 */
export type RouteId = UpstreamWire | 'chat-completions' | 'cache-hit'

/** The response cache's opt-in: an hour, so every request after the first of a run is a hit. */
const CACHE_TTL_HEADER = { 'x-modelgate-cache-ttl': '3600' }
/** What a modelgate answer from its cache carries; the cache phases fail any answer without it. */
const CACHE_HIT = { name: 'x-modelgate-cache', value: 'hit' }
/**
 * The cache phases compare a hit with the cheapest forwarded request, so of the columns without a cache only
 * `pass/undici` runs them.
 */
const NOT_THE_CACHE_BASELINE = 'no response cache; the cache phases compare a hit with the cheapest forwarded request, pass/undici'

/** How to call a target on one route. */
export interface Route {
  url: string
  headers: Record<string, string>
  body(isStream: boolean): string
  expect: Expectation
}

/** A target that cannot serve a wire says why; the report prints it. */
export interface Skipped {
  skipped: string
}

export interface Target {
  /** Column header. */
  label: string
  routes: Record<RouteId, Route | Skipped>
  /** The process whose CPU and memory the column reports. */
  server: ServerProcess
  /** Only these phases measure it (its other cells say `onlyIn.why`); absent: every phase its routes serve. */
  onlyIn?: { phases: readonly PhaseId[]; why: string }
}

export const INPUT = 'What is the capital of France?'

/** A word of each upstream fixture's text (text.json / text.sse of test/fixtures/providers/openai and openai-chat). */
const ANSWER: Record<UpstreamWire, string> = { responses: 'Paris', chat: 'Hello' }
/** A Responses stream: its text deltas and its last event, the same names directly and through a gateway. */
const RESPONSES_STREAM = { firstTokenMarker: 'response.output_text.delta', completedMarker: 'response.completed' }
/** A Chat Completions stream: the first chunk whose delta starts with content (the role chunk does not), and the end line. */
const CHAT_STREAM = { firstTokenMarker: '"delta":{"content":', completedMarker: 'data: [DONE]' }

/** A Responses answer to the client, built from what the upstream of `wire` said. */
const responsesAnswer = (wire: UpstreamWire): Expectation => ({ ...RESPONSES_STREAM, answerMarker: ANSWER[wire] })
const chatAnswer: Expectation = { ...CHAT_STREAM, answerMarker: ANSWER.chat }

const bearer = (key: string) => ({ 'content-type': 'application/json', authorization: `Bearer ${key}` })
const responsesBody = (model: string) => (isStream: boolean) => JSON.stringify({ model, input: INPUT, stream: isStream })
const chatBody = (model: string) => (isStream: boolean) =>
  JSON.stringify({
    model,
    messages: [{ role: 'user', content: INPUT }],
    stream: isStream,
    ...(isStream ? { stream_options: { include_usage: true } } : {}),
  })

/**
 * Both wires of the upstream, called with its own requests, through `baseUrl` (the upstream or a relay). In the cache
 * phases the cache baseline serves the same request as in the Responses phases: nothing to cache, everything forwarded.
 */
const relayRoutes = (baseUrl: string, isCacheBaseline: boolean): Target['routes'] => {
  const responses: Route = { url: `${baseUrl}/responses`, headers: bearer(UPSTREAM_KEY), body: responsesBody('gpt-4.1'), expect: responsesAnswer('responses') }
  const chat: Route = { url: `${baseUrl}/chat/completions`, headers: bearer(UPSTREAM_KEY), body: chatBody('gpt-4.1-mini'), expect: chatAnswer }
  // A relay has nothing to translate: a Chat Completions client is the same request as the translated phases'.
  return { responses, chat, 'chat-completions': chat, 'cache-hit': isCacheBaseline ? responses : { skipped: NOT_THE_CACHE_BASELINE } }
}

/** The upstream itself: the reference every "added" figure subtracts. */
export const directTarget = (upstream: ServerProcess): Target => ({ label: 'direct', routes: relayRoutes(upstream.ready.url!, false), server: upstream })

/**
 * The bare pass-through baseline (bench/passthrough.mjs) with one of its upstream clients. In the translated
 * phases it relays the client's Chat Completions request unchanged: the cost of a proxy that does not translate.
 */
export const startPassthrough = async (upstreamUrl: string, client: 'undici' | 'fetch'): Promise<Target> => {
  const server = await startServer(`pass-through (${client})`, './passthrough.mjs', { BENCH_UPSTREAM_URL: upstreamUrl, BENCH_CLIENT: client })
  return { label: `pass/${client}`, routes: relayRoutes(server.ready.url!, client === 'undici'), server }
}

/** How to start one modelgate column. */
export interface ModelgateColumn {
  label: string
  /** Extra node flags (`--cpu-prof`). */
  execArgv?: string[]
  /** `off`: the usage ledger turned off (`ledger: { enabled: false }`). */
  ledger?: 'on' | 'off'
  onlyIn?: Target['onlyIn']
}

/**
 * modelgate from `buildDir`. In the translated phases the client speaks Responses and the model's only endpoint is
 * a Chat Completions provider (bench/gateway.mjs); in the Chat Completions phases the client asks
 * `POST /chat/completions` for that same model.
 */
export const startModelgate = async (upstreamUrl: string, buildDir: string, column: ModelgateColumn): Promise<Target> => {
  const env = { BENCH_UPSTREAM_URL: upstreamUrl, BENCH_BUILD_DIR: buildDir, BENCH_LEDGER: column.ledger ?? 'on' }
  const server = await startServer(column.label, './gateway.mjs', env, column.execArgv)
  return modelgateTarget(column.label, server, column.onlyIn)
}

/**
 * A modelgate column served by `server` (its `ready` says the URL and a regular key), configured with the bench's
 * providers (bench/providers.mjs): the library in bench/gateway.mjs, or the runner (bench/runner.ts).
 */
export const modelgateTarget = (label: string, server: ServerProcess, onlyIn?: Target['onlyIn']): Target => {
  const route = (model: string, wire: UpstreamWire): Route => ({
    url: `${server.ready.url}/api/v1/responses`,
    headers: bearer(server.ready.key!),
    body: responsesBody(model),
    expect: responsesAnswer(wire),
  })
  const chatCompletions: Route = {
    url: `${server.ready.url}/api/v1/chat/completions`,
    headers: bearer(server.ready.key!),
    body: chatBody('bench/chat-model'),
    expect: chatAnswer,
  }
  const responses = route('openai/gpt-4.1', 'responses')
  // The same request with the cache's opt-in: after the run's first request every answer must be a hit.
  const cacheHit: Route = { ...responses, headers: { ...responses.headers, ...CACHE_TTL_HEADER }, expect: { ...responses.expect, header: CACHE_HIT } }
  return {
    label,
    routes: { responses, chat: route('bench/chat-model', 'chat'), 'chat-completions': chatCompletions, 'cache-hit': cacheHit },
    server,
    ...(onlyIn ? { onlyIn } : {}),
  }
}

/** Tried with Portkey 1.15.2: a Responses request for a Chat Completions provider. */
const PORTKEY_NO_TRANSLATION =
  'no Responses → Chat Completions translation: its groq provider answers "createModelResponse is not supported by groq", ' +
  'and the one chat provider that accepts /v1/responses (iointelligence) relays the body to /chat/completions and returns chat chunks'

/** Why the Portkey column sits out the cache phases. */
const PORTKEY_NO_CACHE =
  'its cache is configured per request through a Portkey config, which this bench does not set up; ' +
  'and a Portkey forward is no cheaper baseline for a hit than pass/undici'

/**
 * Portkey's AI Gateway (npm `@portkey-ai/gateway`, bench/portkey.mjs): its `openai` provider with the loopback
 * upstream as custom host, so it calls the same `POST …/responses` and `POST …/chat/completions` the other targets reach.
 */
export const startPortkey = async (upstreamUrl: string): Promise<Target> => {
  const server = await startServer('Portkey AI Gateway', './portkey.mjs', {})
  const headers = { ...bearer(UPSTREAM_KEY), 'x-portkey-provider': 'openai', 'x-portkey-custom-host': upstreamUrl }
  const responses: Route = { url: `${server.ready.url}/v1/responses`, headers, body: responsesBody('gpt-4.1'), expect: responsesAnswer('responses') }
  const chatCompletions: Route = { url: `${server.ready.url}/v1/chat/completions`, headers, body: chatBody('gpt-4.1-mini'), expect: chatAnswer }
  return {
    label: 'portkey',
    routes: { responses, chat: { skipped: PORTKEY_NO_TRANSLATION }, 'chat-completions': chatCompletions, 'cache-hit': { skipped: PORTKEY_NO_CACHE } },
    server,
  }
}

/**
 * Other gateways to compare against. To add one: start it in a child process pointed at
 * `upstreamUrl` as its OpenAI base URL (see `startServer` and bench/passthrough.mjs for the IPC
 * `stats` contract its wrapper script must answer) and return its `Target`; or return why it cannot
 * run here, which the report prints.
 */
export interface OtherGateway {
  name: string
  start(upstreamUrl: string): Promise<Target | Skipped>
}

export const OTHER_GATEWAYS: OtherGateway[] = [
  { name: 'LiteLLM proxy', start: async () => ({ skipped: 'Python; no Python packages (PyPI) on this machine' }) },
  { name: 'Portkey AI Gateway', start: (upstreamUrl) => startPortkey(upstreamUrl) },
  { name: 'Bifrost', start: async () => ({ skipped: 'Go binary; not available on this machine' }) },
]
