/**
 * Read-SSRF through Azure BYOK: a caller's credential chooses the upstream host (legacy `endpoint_url`, or a
 * `resource_name`) when the operator configured no Azure base URL. Every vector points at an "internal" loopback
 * server, which must never be reached; DNS names resolve through a resolver the test injects (it answers loopback),
 * so nothing leaves the machine.
 */

import type { LookupAddress, LookupOptions, lookup } from 'node:dns'
import { Agent, fetch as undiciFetch } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createGateway, type Gateway } from '../../../src/gateway/gateway'
import { silentLogger } from '../../../src/core/logger'
import type { GatewayOptions } from '../../../src/gateway/options'
import { createSecretBox } from '../../../src/core/secrets'
import type { HostResolver, UpstreamGuard } from '../../../src/core/upstream-guard'
import { createRepositories } from '../../../src/repositories'
import { fetchTransport, type UpstreamTransport } from '../../../src/transport/contract'
import { createByokCredential } from '../../../src/services/byok'
import { azureOpenAIAdapter } from '../../../src/providers/openai-chat'
import { memoryStorage } from '../../../src/storage/memory'
import { undiciTransport, type UndiciTransport } from '../../../src/transport/undici'
import { TEST_ENCRYPTION_KEY } from '../../helpers/gateway'
import { jsonFixture, startUpstream, type Upstream } from '../../helpers/upstream'

const MODEL = 'contoso/gpt-4o'
const DEPLOYMENT = 'gpt4o-prod'
const AZURE_KEY = 'azure-key-7d1f0c9e4b2a6e8d3c5f'
const AZURE_NAME = 'fabrikam.openai.azure.com'

/** The test's DNS: every name is this machine. */
const LOOPBACK: LookupAddress[] = [{ address: '127.0.0.1', family: 4 }]

/**
 * The runtime's fetch with that DNS, so the fetch transport reaches the loopback server under an Azure name. The
 * gateway's own check before the call uses the injected `upstreamGuard.resolve`, not this.
 */
const loopbackAgent = new Agent({
  connect: {
    lookup: ((_hostname: string, options: LookupOptions, callback: (error: null, address: string | LookupAddress[], family?: number) => void) =>
      options.all ? callback(null, LOOPBACK) : callback(null, LOOPBACK[0]!.address, 4)) as unknown as typeof lookup,
  },
})
const fetchViaLoopbackDns = ((input: string, init: RequestInit) =>
  undiciFetch(input, { ...(init as object), dispatcher: loopbackAgent })) as unknown as typeof fetch

const TRANSPORTS: Array<[string, () => UpstreamTransport & { close?: () => Promise<void> }]> = [
  ['fetch', () => fetchTransport(fetchViaLoopbackDns)],
  ['undici', () => undiciTransport()],
]

const legacyKey = (endpointURL: string) =>
  JSON.stringify([{ model_slug: MODEL, endpoint_url: endpointURL, api_key: AZURE_KEY, model_id: DEPLOYMENT }])

let internal: Upstream
beforeAll(async () => {
  // Plays both the internal service an attacker wants to read and, in the allowed case, the Azure upstream.
  internal = await startUpstream(() => jsonFixture('azure', 'text.json'))
})
afterAll(async () => {
  await internal.close()
  await loopbackAgent.close()
})

const port = () => new URL(internal.url).port

/** IP literals in every spelling, `localhost`, and hosts outside Azure's zones, all aimed at the internal server. */
const vectors = () => [
  [`http://127.0.0.1:${port()}/internal/x/chat/completions?api-version=2024-10-21`, 'must use https'],
  [`https://127.0.0.1:${port()}/internal/x`, 'must use the default port'],
  ['https://127.0.0.1/internal/x', 'the host must be a DNS name, not an IP address'],
  ['https://[::1]/x', 'the host must be a DNS name, not an IP address'],
  ['https://[::ffff:127.0.0.1]/x', 'the host must be a DNS name, not an IP address'],
  ['https://2130706433/x', 'the host must be a DNS name, not an IP address'],
  ['https://0x7f000001/x', 'the host must be a DNS name, not an IP address'],
  ['https://0x7f.1/x', 'the host must be a DNS name, not an IP address'],
  ['https://127.1/x', 'the host must be a DNS name, not an IP address'],
  ['https://localhost/x', 'the host must be a public DNS name'],
  ['https://LOCALHOST./x', 'the host must be a public DNS name'],
  ['https://intranet-service/x', 'the host must be a public DNS name'],
  ['https://fabrikam.openai.azure.com./openai/v1', 'the host must be a public DNS name'],
  ['https://openai.azure.com.internal-service.test/openai/v1', 'the host must be under *.openai.azure.com, *.cognitiveservices.azure.com, *.services.ai.azure.com'],
  ['https://user:password@fabrikam.openai.azure.com/openai/v1', 'must not carry a user name or password'],
  ['https://fabrikam.openai.azure.com:8443/openai/v1', 'must use the default port'],
  ['http://fabrikam.openai.azure.com/openai/v1', 'must use https'],
]

describe.each(TRANSPORTS)('caller-chosen upstream locations (%s transport)', (_name, makeTransport) => {
  let transport: ReturnType<(typeof TRANSPORTS)[number][1]>
  let gateway: Gateway | undefined
  let resolved: string[]
  let management: string
  let regular: string

  beforeAll(() => {
    transport = makeTransport()
  })
  afterAll(async () => {
    await transport.close?.()
  })
  afterEach(async () => {
    await gateway?.close()
    gateway = undefined
    internal.requests.length = 0
  })

  const resolveToLoopback: HostResolver = async (hostname) => {
    resolved.push(hostname)
    return LOOPBACK.map(({ address }) => ({ address, family: 4 as const }))
  }

  const start = async (options: Partial<GatewayOptions> = {}) => {
    resolved = []
    gateway = createGateway({
      storage: memoryStorage(),
      logger: silentLogger,
      encryptionKeys: [TEST_ENCRYPTION_KEY],
      transport,
      // No Azure base URL: the credential says where the upstream is, which is what the guard is for.
      models: [{ slug: MODEL, name: 'GPT-4o on Azure', endpoints: [{ provider: 'azure', model: 'gpt-4o', contextLength: 128_000, pricing: { prompt: 0, completion: 0 } }] }],
      ...options,
      upstreamGuard: { resolve: resolveToLoopback, ...options.upstreamGuard },
    })
    management = (await gateway.admin.createKey({ kind: 'management' })).key
    regular = (await gateway.admin.createKey({ kind: 'regular' })).key
    return gateway
  }

  const call = (method: string, path: string, key: string, body?: unknown) =>
    gateway!.fetch(
      new Request(`http://gateway.test/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    )
  const postByok = (key: string) => call('POST', '/byok', management, { provider: 'azure', key })
  const ask = () => call('POST', '/responses', regular, { model: MODEL, input: 'hi' })

  /** Stores a credential as an older gateway (or a direct write) could have, past today's write checks. */
  const storeUnchecked = async (rawKey: string) => {
    const repositories = createRepositories(gateway!.storage, { textModel: MODEL, imageModel: MODEL, providerSort: 'price' }, () => new Date())
    const account = (await repositories.accounts.get((await gateway!.admin.ensureDefaultAccount()).id))!
    const acceptAnything: UpstreamGuard = { checkUrl: (url) => new URL(url), isAllowedAddress: () => true, resolve: undefined }
    await createByokCredential(repositories, createSecretBox([TEST_ENCRYPTION_KEY]), account, { provider: 'azure', key: rawKey }, new Date(), acceptAnything, () => ({
      displayName: 'Azure OpenAI',
      credential: azureOpenAIAdapter.credential,
    }))
  }

  const expectRefused = async (response: Response, reason: string) => {
    expect(response.status).toBe(403)
    const text = await response.text()
    expect(JSON.parse(text)).toEqual({
      error: {
        code: 403,
        message: `Azure OpenAI: The credential's upstream location is not allowed: ${reason}`,
        metadata: { error_type: 'permission_denied', provider_name: 'azure' },
      },
    })
    expect(text).not.toContain(AZURE_KEY)
  }

  it('POST /byok refuses every vector, naming the field and never echoing the URL or the key; nothing is sent', async () => {
    await start()
    for (const [url, reason] of vectors()) {
      const response = await postByok(legacyKey(url!))
      const text = await response.text()
      expect(response.status, url).toBe(400)
      expect(JSON.parse(text), url).toEqual({ error: { code: 400, message: `body.key.0.endpoint_url: ${reason}` } })
      expect(text).not.toContain(AZURE_KEY)
    }
    // Nothing was stored, so the model has no endpoint with a key.
    expect((await ask()).status).toBeGreaterThanOrEqual(400)
    expect(internal.requests).toHaveLength(0)
    expect(resolved).toEqual([])
  })

  it('PATCH /byok refuses a rotation to an internal endpoint and keeps the stored key', async () => {
    await start()
    const created = await postByok(JSON.stringify([{ api_key: AZURE_KEY, resource_name: 'fabrikam', resource_type: 'openai' }]))
    expect(created.status).toBe(200)
    const { data } = (await created.json()) as { data: { id: string; label: string } }

    const rotated = await call('PATCH', `/byok/${data.id}`, management, { key: legacyKey(`http://[::1]:${port()}/x`) })

    expect(rotated.status).toBe(400)
    expect(await rotated.json()).toEqual({ error: { code: 400, message: 'body.key.0.endpoint_url: must use https' } })
    const after = (await (await call('GET', `/byok/${data.id}`, management)).json()) as { data: { label: string } }
    expect(after.data.label).toBe(data.label)
    expect(internal.requests).toHaveLength(0)
  })

  it('a stored credential that skipped the write checks is still refused at use, before any connection', async () => {
    await start({ upstreamGuard: { allowHttp: true, allowPrivateNetworks: true, allowedPorts: [Number(port())] } })
    // Even an operator who allows http, private networks and this port gets no IP literal from a caller.
    await storeUnchecked(legacyKey(`http://127.0.0.1:${port()}/internal/x/chat/completions?api-version=2024-10-21`))

    await expectRefused(await ask(), 'the host must be a DNS name, not an IP address')
    expect(internal.requests).toHaveLength(0)
  })

  it('a stored credential with a port and plain http is refused under the default policy', async () => {
    await start()
    await storeUnchecked(legacyKey(`http://${AZURE_NAME}:${port()}/openai/deployments/x/chat/completions`))

    await expectRefused(await ask(), 'must use https')
    expect(internal.requests).toHaveLength(0)
    expect(resolved).toEqual([])
  })

  it('an Azure name that resolves to loopback is refused (legacy endpoint), and no connection is made', async () => {
    await start()
    const created = await postByok(legacyKey(`https://${AZURE_NAME}/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=2024-10-21`))
    expect(created.status).toBe(200)

    await expectRefused(await ask(), 'the host must resolve to public addresses only')
    expect(resolved).toEqual([AZURE_NAME])
    expect(internal.requests).toHaveLength(0)
  })

  it('an Azure resource name that resolves to loopback is refused too', async () => {
    await start()
    expect((await postByok(JSON.stringify([{ api_key: AZURE_KEY, resource_name: 'fabrikam', resource_type: 'openai' }]))).status).toBe(200)

    await expectRefused(await ask(), 'the host must resolve to public addresses only')
    expect(resolved).toEqual([AZURE_NAME])
    expect(internal.requests).toHaveLength(0)
  })

  it('a destination the operator allowed really works: name resolved by the injected resolver, canonical path, key sent', async () => {
    await start({ upstreamGuard: { allowHttp: true, allowPrivateNetworks: ['127.0.0.0/8'], allowedPorts: [Number(port())] } })
    const endpoint = `http://${AZURE_NAME}:${port()}/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=2024-10-21&extra=1`
    expect((await postByok(legacyKey(endpoint))).status).toBe(200)

    const response = await ask()

    expect(response.status).toBe(200)
    const body = (await response.json()) as { output: Array<{ content: Array<{ text: string }> }> }
    expect(body.output[0]!.content[0]!.text.length).toBeGreaterThan(0)
    expect(resolved).toEqual([AZURE_NAME])
    expect(internal.requests).toHaveLength(1)
    // Rebuilt from the deployment and api-version: the caller's other query text goes nowhere.
    expect(internal.requests[0]!.url).toBe(`/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=2024-10-21`)
    expect(internal.requests[0]!.headers['api-key']).toBe(AZURE_KEY)
    expect(internal.requests[0]!.headers.host).toBe(`${AZURE_NAME}:${port()}`)
  })

  it('an allow list of networks that does not cover the address still refuses it', async () => {
    await start({ upstreamGuard: { allowHttp: true, allowPrivateNetworks: ['::1/128'], allowedPorts: [Number(port())] } })
    expect((await postByok(legacyKey(`http://${AZURE_NAME}:${port()}/openai/v1`))).status).toBe(200)

    await expectRefused(await ask(), 'the host must resolve to public addresses only')
    expect(internal.requests).toHaveLength(0)
  })
})

describe('an operator-configured Azure base URL', () => {
  let gateway: Gateway | undefined
  afterEach(async () => {
    await gateway?.close()
    internal.requests.length = 0
  })

  it('keeps the caller from choosing a path on the operator host', async () => {
    gateway = createGateway({
      storage: memoryStorage(),
      logger: silentLogger,
      encryptionKeys: [TEST_ENCRYPTION_KEY],
      providers: { azure: { baseURL: internal.url } },
      models: [{ slug: MODEL, name: 'GPT-4o on Azure', endpoints: [{ provider: 'azure', model: 'gpt-4o', contextLength: 128_000, pricing: { prompt: 0, completion: 0 } }] }],
    })
    const management = (await gateway.admin.createKey({ kind: 'management' })).key
    const regular = (await gateway.admin.createKey({ kind: 'regular' })).key
    const send = (path: string, key: string, body: unknown) =>
      gateway!.fetch(
        new Request(`http://gateway.test/api/v1${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      )
    const key = legacyKey(`https://${AZURE_NAME}/internal/admin/chat/completions?api-version=2024-10-21&token=x`)
    expect((await send('/byok', management, { provider: 'azure', key })).status).toBe(200)

    expect((await send('/responses', regular, { model: MODEL, input: 'hi' })).status).toBe(200)

    expect(internal.requests.map((request) => request.url)).toEqual([`/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=2024-10-21`])
  })
})
