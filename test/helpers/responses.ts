/**
 * A gateway wired to loopback upstreams for `/responses` tests: providers point at fixture servers,
 * and the caller gets a regular key (management keys may not run inference).
 */

import { createGateway, type Gateway } from '../../src/gateway/gateway'
import { silentLogger } from '../../src/core/logger'
import type { GatewayOptions } from '../../src/gateway/options'
import { memoryStorage } from '../../src/storage/memory'
import { TEST_ENCRYPTION_KEY } from './gateway'
import { startUpstream, type Upstream } from './upstream'

export interface ResponsesHarness {
  gateway: Gateway
  /** A regular key of the default account. */
  key: string
  managementKey: string
  upstreams: Record<string, Upstream>
  /** POST /responses with a JSON body. */
  post(body: unknown, headers?: Record<string, string>, signal?: AbortSignal): Promise<Response>
  /** POST /byok as the management key. */
  addByok(body: Record<string, unknown>): Promise<{ id: string }>
  close(): Promise<void>
}

/**
 * Starts one loopback upstream per provider id and a gateway whose providers point at them.
 * `providers` maps a provider id (built-in, or custom with `api`) to its shared key (`null` for none).
 */
export const createResponsesHarness = async (
  providers: Record<string, { api?: NonNullable<GatewayOptions['providers']>[string]['api']; apiKey?: string | null }>,
  options: Partial<GatewayOptions> = {},
): Promise<ResponsesHarness> => {
  const upstreams: Record<string, Upstream> = {}
  const configured: NonNullable<GatewayOptions['providers']> = {}
  for (const [id, provider] of Object.entries(providers)) {
    const upstream = await startUpstream()
    upstreams[id] = upstream
    configured[id] = {
      baseURL: upstream.url,
      ...(provider.api ? { api: provider.api } : {}),
      ...(provider.apiKey === null ? {} : { apiKey: provider.apiKey ?? `sk-shared-${id}-0123456789abcdef` }),
    }
  }
  const gateway = createGateway({
    storage: memoryStorage(),
    logger: silentLogger,
    encryptionKeys: [TEST_ENCRYPTION_KEY],
    providers: configured,
    // Tests assert which endpoint serves: the cheapest first every time, not the weighted pick.
    routing: { balancing: 'cheapest' },
    ...options,
  })
  const management = await gateway.admin.createKey({ kind: 'management' })
  const regular = await gateway.admin.createKey({ kind: 'regular' })
  const post: ResponsesHarness['post'] = (body, headers = {}, signal) =>
    gateway.fetch(
      new Request('http://gateway.test/api/v1/responses', {
        method: 'POST',
        headers: { authorization: `Bearer ${regular.key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      }),
    )
  return {
    gateway,
    key: regular.key,
    managementKey: management.key,
    upstreams,
    post,
    async addByok(body) {
      const response = await gateway.fetch(
        new Request('http://gateway.test/api/v1/byok', {
          method: 'POST',
          headers: { authorization: `Bearer ${management.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      )
      if (response.status !== 200) throw new Error(`POST /byok failed: ${response.status} ${await response.text()}`)
      return ((await response.json()) as { data: { id: string } }).data
    },
    async close() {
      await Promise.all(Object.values(upstreams).map((upstream) => upstream.close()))
      await gateway.close()
    },
  }
}

/** Reads an SSE response into its events (and the raw text). */
export const readSseEvents = async (response: Response) => {
  const text = await response.text()
  const events: Array<{ event?: string; data: any }> = []
  for (const block of text.split('\n\n')) {
    if (!block.trim() || block.startsWith(':')) continue
    let event: string | undefined
    let data = ''
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data += line.slice(6)
    }
    events.push({ event, data: data === '[DONE]' ? '[DONE]' : JSON.parse(data) })
  }
  return { text, events }
}
