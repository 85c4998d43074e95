/**
 * The provider families the SDK end-to-end tests run against: a loopback upstream per family that
 * replays the recorded fixture a request calls for (test/fixtures/providers), and the gateway on a
 * real node:http server in front of them, so each client speaks HTTP to it as it would in production.
 */

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toNodeListener } from '../../src/adapters/node'
import { createGateway, type Gateway } from '../../src/gateway/gateway'
import { silentLogger } from '../../src/core/logger'
import type { GatewayOptions } from '../../src/gateway/options'
import { memoryStorage } from '../../src/storage/memory'
import { undiciTransport } from '../../src/transport/undici'
import { TEST_ENCRYPTION_KEY } from './gateway'
import { jsonFixture, sseFixture, startUpstream, type RecordedRequest, type Upstream, type UpstreamHandler, type UpstreamReply } from './upstream'

export type FamilyId = 'openai' | 'chat' | 'anthropic' | 'gemini'

export interface Family {
  id: FamilyId
  /** Fixture folder under test/fixtures/providers. */
  folder: string
  model: string
  /** Gateway-only request fields (provider routing), sent beside the SDK's own parameters. */
  extra: Record<string, unknown>
  /** A phrase of the plain text answer (text.json / text.sse). */
  textPhrase: string
  /** A phrase of the answer after the tool results (sdk-tool-result.json / .sse). */
  toolResultPhrase: string
  /** Picks the fixture case for a request the gateway sent upstream. */
  fixtureCase(request: RecordedRequest): string
  isStream(request: RecordedRequest): boolean
}

const some = (value: unknown, predicate: (item: any) => boolean): boolean => Array.isArray(value) && value.some(predicate)

export const FAMILIES: Record<FamilyId, Family> = {
  openai: {
    id: 'openai',
    folder: 'openai',
    model: 'openai/gpt-4.1-mini',
    extra: {},
    textPhrase: 'The capital of France is Paris — home to the Eiffel Tower',
    toolResultPhrase: 'partly cloudy in Paris',
    isStream: (request) => request.json.stream === true,
    fixtureCase(request) {
      const { input, tools, reasoning } = request.json
      if (some(input, (item) => item.type === 'function_call_output')) return 'sdk-tool-result'
      if (some(tools, () => true)) return 'tool-call'
      if (reasoning && !some(input, (item) => item.type === 'reasoning')) return 'reasoning'
      return 'text'
    },
  },
  chat: {
    id: 'chat',
    folder: 'openai-chat',
    model: 'meta-llama/llama-3.3-70b-instruct',
    extra: { provider: { only: ['groq'] } },
    textPhrase: 'Bonjour ! 👋 Hello!',
    toolResultPhrase: 'in Tokyo it’s 24 °C and sunny',
    isStream: (request) => request.json.stream === true,
    fixtureCase(request) {
      const { messages, tools, model } = request.json
      if (some(messages, (message) => message.role === 'tool')) return 'sdk-tool-result'
      if (some(tools, () => true)) return 'tool-call'
      if (model === 'deepseek-reasoner' && !some(messages, (message) => message.role === 'assistant')) return 'reasoning'
      return 'text'
    },
  },
  anthropic: {
    id: 'anthropic',
    folder: 'anthropic',
    model: 'anthropic/claude-sonnet-4.5',
    extra: {},
    textPhrase: 'The capital of France is **Paris**',
    toolResultPhrase: '22 °C and sunny in Paris',
    isStream: (request) => request.json.stream === true,
    fixtureCase(request) {
      const { messages, tools, thinking } = request.json
      const isThinking = thinking?.type === 'enabled'
      if (some(messages, (message) => some(message.content, (block) => block.type === 'tool_result'))) return 'sdk-tool-result'
      if (some(tools, () => true)) return isThinking ? 'sdk-reasoning-tool-call' : 'tool-call'
      if (isThinking && !some(messages, (message) => message.role === 'assistant')) return 'reasoning'
      return 'text'
    },
  },
  gemini: {
    id: 'gemini',
    folder: 'gemini',
    model: 'google/gemini-2.5-flash',
    extra: {},
    textPhrase: 'The capital of France is Paris, nicknamed the « Ville Lumière »',
    toolResultPhrase: '24 °C and sunny in Tokyo',
    isStream: (request) => request.url.includes(':streamGenerateContent'),
    fixtureCase(request) {
      const { contents, tools, generationConfig } = request.json
      if (some(contents, (content) => some(content.parts, (part) => part.functionResponse))) return 'sdk-tool-result'
      if (some(tools, () => true)) return 'tool-call'
      if (generationConfig?.thinkingConfig?.includeThoughts && !some(contents, (content) => content.role === 'model')) return 'reasoning'
      return 'text'
    },
  },
}

export const FAMILY_IDS = Object.keys(FAMILIES) as FamilyId[]

export const replyFor = (family: Family, request: RecordedRequest): UpstreamReply => {
  const name = family.fixtureCase(request)
  return family.isStream(request) ? sseFixture(family.folder, `${name}.sse`) : jsonFixture(family.folder, `${name}.json`)
}

/** The JSON schema of the `get_weather` function tool the tool-call fixtures answer. */
export const WEATHER_PARAMETERS = {
  type: 'object' as const,
  properties: {
    location: { type: 'string' as const, description: 'City and country, e.g. Paris, France' },
    unit: { type: 'string' as const, enum: ['celsius', 'fahrenheit'] },
  },
  required: ['location', 'unit'],
  additionalProperties: false,
}

export interface RunningGateway {
  gateway: Gateway
  server: Server
  /** The API base URL, `http://127.0.0.1:<port>/api/v1`. */
  url: string
  /** A regular API key of the gateway. */
  key: string
}

export interface SdkHarness {
  /** Filled by `start()`. */
  upstreams: Record<FamilyId, Upstream>
  /** A test's own reply for a family (errors, paused streams); `clearOverrides()` drops them. */
  overrides: Partial<Record<FamilyId, UpstreamHandler>>
  start(): Promise<void>
  /** A gateway routed to the family upstreams, listening on loopback. */
  startGateway(options?: Partial<GatewayOptions>): Promise<RunningGateway>
  /** The last request the gateway sent to a family's upstream. */
  lastRequest(id: FamilyId): RecordedRequest
  clearOverrides(): void
  close(): Promise<void>
}

export const createSdkHarness = (): SdkHarness => {
  const upstreams = {} as Record<FamilyId, Upstream>
  const overrides: SdkHarness['overrides'] = {}
  const transport = undiciTransport()
  const running: RunningGateway[] = []

  return {
    upstreams,
    overrides,
    async start() {
      for (const id of FAMILY_IDS) {
        const family = FAMILIES[id]
        upstreams[id] = await startUpstream((request) => (overrides[id] ?? ((recorded) => replyFor(family, recorded)))(request))
      }
    },
    async startGateway(options = {}) {
      const gateway = createGateway({
        storage: memoryStorage(),
        logger: silentLogger,
        encryptionKeys: [TEST_ENCRYPTION_KEY],
        transport,
        providers: {
          openai: { baseURL: upstreams.openai.url, apiKey: 'sk-test-openai-0123456789abcdef' },
          anthropic: { baseURL: upstreams.anthropic.url, apiKey: 'sk-ant-test-0123456789abcdef' },
          'google-ai-studio': { baseURL: upstreams.gemini.url, apiKey: 'AIza-test-0123456789abcdef' },
          groq: { baseURL: upstreams.chat.url, apiKey: 'gsk-test-0123456789abcdef' },
          // DeepSeek speaks Chat Completions too; its reasoner is the chat family's reasoning model.
          deepseek: { baseURL: upstreams.chat.url, apiKey: 'sk-deepseek-test-0123456789abcdef' },
        },
        // Tests assert which endpoint serves: the cheapest first every time, not the weighted pick.
        routing: { balancing: 'cheapest' },
        ...options,
      })
      const { key } = await gateway.admin.createKey({ kind: 'regular', name: 'sdk tests' })
      const server = createServer(toNodeListener(gateway))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const { port } = server.address() as AddressInfo
      const started = { gateway, server, url: `http://127.0.0.1:${port}/api/v1`, key }
      running.push(started)
      return started
    },
    lastRequest(id) {
      const request = upstreams[id].requests.at(-1)
      if (!request) throw new Error(`no request reached the ${id} upstream`)
      return request
    },
    clearOverrides() {
      for (const id of FAMILY_IDS) delete overrides[id]
    },
    async close() {
      for (const { server, gateway } of running) {
        server.closeAllConnections()
        await new Promise<void>((resolve) => server.close(() => resolve()))
        await gateway.close()
      }
      await Promise.all(Object.values(upstreams).map((upstream) => upstream.close()))
      await transport.close()
    },
  }
}
