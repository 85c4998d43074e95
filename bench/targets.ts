/**
 * What the bench sends load to. Every target serves `POST …/responses` and reaches the same loopback
 * upstream, so their columns differ only by what sits in front of it.
 */

import { startServer, type ServerProcess } from './processes'

export interface Target {
  /** Column header. */
  label: string
  /** The `POST …/responses` URL. */
  url: string
  headers: Record<string, string>
  body(isStream: boolean): string
  /** The process whose CPU and memory the column reports. */
  server: ServerProcess
}

export const INPUT = 'What is the capital of France?'
const UPSTREAM_KEY = 'sk-bench-0123456789abcdef'

const upstreamBody = (isStream: boolean) => JSON.stringify({ model: 'gpt-4.1', input: INPUT, stream: isStream })

/** The upstream itself: the reference every "added" figure subtracts. */
export const directTarget = (upstream: ServerProcess): Target => ({
  label: 'direct',
  url: `${upstream.ready.url}/responses`,
  headers: { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` },
  body: upstreamBody,
  server: upstream,
})

/** The bare pass-through baseline (bench/passthrough.mjs) with one of its upstream clients. */
export const startPassthrough = async (upstreamUrl: string, client: 'undici' | 'fetch'): Promise<Target> => {
  const server = await startServer(`pass-through (${client})`, './passthrough.mjs', { BENCH_UPSTREAM_URL: upstreamUrl, BENCH_CLIENT: client })
  return {
    label: `pass/${client}`,
    url: `${server.ready.url}/responses`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` },
    body: upstreamBody,
    server,
  }
}

/** modelgate from `buildDir`, optionally with extra node flags (`--cpu-prof`). */
export const startModelgate = async (upstreamUrl: string, buildDir: string, execArgv: string[] = []): Promise<Target> => {
  const server = await startServer('modelgate', './gateway.mjs', { BENCH_UPSTREAM_URL: upstreamUrl, BENCH_BUILD_DIR: buildDir }, execArgv)
  return {
    label: 'modelgate',
    url: `${server.ready.url}/api/v1/responses`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.ready.key}` },
    body: (isStream) => JSON.stringify({ model: 'openai/gpt-4.1', input: INPUT, stream: isStream }),
    server,
  }
}

/**
 * Portkey's AI Gateway (npm `@portkey-ai/gateway`, bench/portkey.mjs): its OpenAI provider with the loopback
 * upstream as custom host, so it calls the same `POST …/responses` the other targets reach.
 */
export const startPortkey = async (upstreamUrl: string): Promise<Target> => {
  const server = await startServer('Portkey AI Gateway', './portkey.mjs', {})
  return {
    label: 'portkey',
    url: `${server.ready.url}/v1/responses`,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${UPSTREAM_KEY}`,
      'x-portkey-provider': 'openai',
      'x-portkey-custom-host': upstreamUrl,
    },
    body: upstreamBody,
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
  start(upstreamUrl: string): Promise<Target | { skipped: string }>
}

export const OTHER_GATEWAYS: OtherGateway[] = [
  { name: 'LiteLLM proxy', start: async () => ({ skipped: 'Python; no Python packages (PyPI) on this machine' }) },
  { name: 'Portkey AI Gateway', start: (upstreamUrl) => startPortkey(upstreamUrl) },
  { name: 'Bifrost', start: async () => ({ skipped: 'Go binary; not available on this machine' }) },
]
