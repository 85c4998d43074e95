/**
 * `createTestGateway`: a gateway on the memory store with an account, a management key and a regular key
 * ready, scripted providers wired in, and the calls a test makes most.
 */

import { randomHex } from '../core/crypto'
import { createGateway, type Gateway } from '../gateway/gateway'
import type { GatewayOptions } from '../gateway/options'
import type { ModelEntry } from '../engine/models'
import type { ProviderConfig } from '../engine/providers'
import { memoryStorage } from '../storage/memory'
import { scriptedAdapter } from './scripted-adapter'
import { isScriptedProvider, type ScriptedProvider } from './scripted-provider'
import { scriptedTransport } from './scripted-transport'
import { scriptedBaseURL } from './wire'

/** The model every scripted provider serves unless `models` says otherwise; new workspaces default to it. */
export const TEST_MODEL = 'test/model'

/** Where the test gateway pretends to live; any origin works, the routes only read the path. */
export const TEST_ORIGIN = 'http://modelgate.test'

// A price, so billing has something to count; the same for every endpoint, so they keep the order given.
const TEST_PRICING = { prompt: 0.000001, completion: 0.000002 }

/** `createGateway` options, whose `providers` may also hold scripted providers. */
export type TestGatewayOptions = Omit<GatewayOptions, 'providers'> & {
  /**
   * Providers by id: scripted ones (from `scriptedProvider`), which serve `test/model` in the order given, and
   * any ordinary provider configuration.
   */
  providers?: Record<string, ScriptedProvider | ProviderConfig>
}

const scriptedConfig = (id: string, provider: ScriptedProvider): ProviderConfig => ({
  adapter: provider.providerTools ? { ...scriptedAdapter, providerTools: provider.providerTools } : scriptedAdapter,
  baseURL: scriptedBaseURL(id),
  ...(provider.apiKey === null ? {} : { apiKey: provider.apiKey }),
  ...(provider.displayName ? { displayName: provider.displayName } : {}),
})

/**
 * Turns options with scripted providers into `createGateway` options: each scripted provider becomes a provider
 * with the scripted adapter, the transport answers them in-process (other upstreams go to `transport` as before),
 * and `test/model` is served by the scripted providers unless `models` has an entry of that slug. Endpoints go cheapest
 * first (`routing.balancing: 'cheapest'`) unless `routing` says otherwise, so the scripted providers keep their order.
 * @example
 * const gateway = createGateway(withScriptedProviders({ storage: myStore, providers: { alpha: scriptedProvider({ reply: 'Hi' }) } }))
 */
export const withScriptedProviders = (options: TestGatewayOptions): GatewayOptions => {
  const scripted: Record<string, ScriptedProvider> = {}
  const providers: Record<string, ProviderConfig> = {}
  for (const [id, provider] of Object.entries(options.providers ?? {})) {
    if (isScriptedProvider(provider)) {
      scripted[id] = provider
      providers[id] = scriptedConfig(id, provider)
    } else providers[id] = provider
  }
  const ids = Object.keys(scripted)
  if (ids.length === 0) return options as GatewayOptions
  const testModel: ModelEntry = {
    slug: TEST_MODEL,
    name: 'Scripted test model',
    endpoints: ids.map((id) => ({ provider: id, model: 'test-model', contextLength: 128_000, pricing: TEST_PRICING })),
  }
  return {
    ...options,
    // Scripted providers serve in the order given, which the weighted pick among their equal prices would not keep.
    routing: { balancing: 'cheapest', ...options.routing },
    providers,
    models: [testModel, ...(options.models ?? [])],
    transport: scriptedTransport(scripted, options.transport),
    workspaceDefaults: { textModel: TEST_MODEL, ...options.workspaceDefaults },
  }
}

/** How `call` sends a request. */
export interface TestCallInit {
  /** The bearer key; the management key by default, `null` for none. */
  key?: string | null
  /** Sent as a JSON body. */
  json?: unknown
  body?: BodyInit
  headers?: Record<string, string>
  signal?: AbortSignal
  /** The host the request is addressed to (default `modelgate.test`), for host-based settings such as `regionalHostnames`. */
  host?: string
}

/** A gateway ready for tests, with its keys and the calls tests make most. */
export interface TestGateway {
  gateway: Gateway
  /**
   * A WHATWG-shaped fetch over the gateway, for clients that take one.
   * @example new OpenAI({ fetch: testGateway.fetch, baseURL: testGateway.baseURL, apiKey: testGateway.regularKey })
   */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>
  /** The API's base URL as `fetch` serves it (`http://modelgate.test/api/v1` by default). */
  baseURL: string
  /** Raw management key of the default account. */
  managementKey: string
  /** Raw regular key of the default account, bound to its default workspace: the one to send inference with. */
  regularKey: string
  /** Its SHA-256 hash, the key's address under `/keys/{hash}`. */
  regularKeyHash: string
  accountId: string
  defaultWorkspaceId: string
  /** Sends `method path` (relative to the base path) as the management key unless `init.key` says otherwise. */
  call(method: string, path: string, init?: TestCallInit): Promise<Response>
  /** `POST /responses` as the regular key. */
  responses(body: Record<string, unknown>, init?: Omit<TestCallInit, 'json' | 'body'>): Promise<Response>
  /** Closes the gateway and its store. */
  close(): Promise<void>
}

/**
 * Creates a gateway for tests: the memory store (unless `storage` is given), no logging (unless `logger` is),
 * a fresh encryption key so BYOK works, and the default account with a management and a regular key. Endpoints go
 * cheapest first (`routing: { balancing: 'cheapest' }`) unless `routing` says otherwise, so a test sees one order
 * where a gateway's default would pick among the cheapest at random.
 * @example
 * const model = scriptedProvider({ reply: 'Hello!' })
 * const testGateway = await createTestGateway({ providers: { scripted: model } })
 * const response = await testGateway.responses({ input: 'Hi' })
 * expect((await response.json()).output[0].content[0].text).toBe('Hello!')
 * expect(model.lastCall?.input).toBe('Hi')
 */
export const createTestGateway = async (options: TestGatewayOptions = {}): Promise<TestGateway> => {
  const gateway = createGateway(
    withScriptedProviders({
      storage: memoryStorage(),
      logger: false,
      // Hex of 32 random bytes: BYOK keys sealed in this gateway's store are opened only by it.
      encryptionKeys: [randomHex(32)],
      ...options,
      routing: { balancing: 'cheapest', ...options.routing },
    }),
  )
  const management = await gateway.admin.createKey({ kind: 'management', name: 'test management' })
  const regular = await gateway.admin.createKey({ kind: 'regular', name: 'test regular' })
  const account = await gateway.admin.ensureDefaultAccount()
  const basePath = (options.basePath ?? '/api/v1').replace(/\/+$/, '')
  const baseURL = `${TEST_ORIGIN}${basePath}`

  const fetch: TestGateway['fetch'] = (input, init) => gateway.fetch(input instanceof Request && init === undefined ? input : new Request(input, init))

  const call: TestGateway['call'] = (method, path, init = {}) => {
    const headers = new Headers(init.headers)
    const key = init.key === undefined ? management.key : init.key
    if (key !== null) headers.set('authorization', `Bearer ${key}`)
    let body = init.body
    if (init.json !== undefined) {
      body = JSON.stringify(init.json)
      if (!headers.has('content-type')) headers.set('content-type', 'application/json')
    }
    const origin = init.host === undefined ? TEST_ORIGIN : `http://${init.host}`
    return gateway.fetch(new Request(`${origin}${basePath}${path}`, { method, headers, body, ...(init.signal ? { signal: init.signal } : {}) }))
  }

  return {
    gateway,
    fetch,
    baseURL,
    managementKey: management.key,
    regularKey: regular.key,
    regularKeyHash: regular.record.hash,
    accountId: account.id,
    defaultWorkspaceId: account.defaultWorkspaceId!,
    call,
    responses: (body, init = {}) => call('POST', '/responses', { key: regular.key, ...init, json: body }),
    close: () => gateway.close(),
  }
}
