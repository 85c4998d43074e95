import { createGateway, type Gateway } from '../../src/gateway/gateway'
import { silentLogger } from '../../src/core/logger'
import type { StorageDriver } from '../../src/storage/contract'
import { memoryStorage } from '../../src/storage/memory'

export const BASE = 'http://gateway.test/api/v1'
/** A fixed master key for tests (base64 of 32 bytes). */
export const TEST_ENCRYPTION_KEY = 'Zm9yLXRlc3RzLW9ubHktMzItYnl0ZXMtbG9uZy1rZXk='

export interface TestGateway {
  gateway: Gateway
  /** Raw management key of the default account. */
  managementKey: string
  /** Raw regular key of the default account, bound to its default workspace. */
  regularKey: string
  /** Its SHA-256 hash, the key's address under `/keys/{hash}`. */
  regularKeyHash: string
  accountId: string
  defaultWorkspaceId: string
  /** Sends a request to the gateway; JSON bodies are encoded when `json` is given. */
  call(method: string, path: string, init?: { key?: string | null; json?: unknown; body?: BodyInit; headers?: Record<string, string> }): Promise<Response>
}

/** A gateway on the memory store with a default account, one management and one regular key. */
export const createTestGateway = async (
  options: { storage?: StorageDriver; basePath?: string; encryptionKeys?: string[] } = {},
): Promise<TestGateway> => {
  const gateway = createGateway({
    storage: options.storage ?? memoryStorage(),
    logger: silentLogger,
    basePath: options.basePath,
    encryptionKeys: options.encryptionKeys ?? [TEST_ENCRYPTION_KEY],
  })
  const management = await gateway.admin.createKey({ kind: 'management', name: 'test management' })
  const regular = await gateway.admin.createKey({ kind: 'regular', name: 'test regular' })
  const account = await gateway.admin.ensureDefaultAccount()
  const base = options.basePath === undefined ? BASE : `http://gateway.test${options.basePath}`

  const call: TestGateway['call'] = (method, path, init = {}) => {
    const headers = new Headers(init.headers)
    const key = init.key === undefined ? management.key : init.key
    if (key !== null) headers.set('authorization', `Bearer ${key}`)
    let body = init.body
    if (init.json !== undefined) {
      body = JSON.stringify(init.json)
      if (!headers.has('content-type')) headers.set('content-type', 'application/json')
    }
    return gateway.fetch(new Request(`${base}${path}`, { method, headers, body }))
  }

  return {
    gateway,
    managementKey: management.key,
    regularKey: regular.key,
    regularKeyHash: regular.record.hash,
    accountId: account.id,
    defaultWorkspaceId: account.defaultWorkspaceId!,
    call,
  }
}

/** Calls `gateway` with a bearer key, sending `json` (when given) as a JSON body. */
export const callAs =
  (gateway: Pick<Gateway, 'fetch'>, key: string) =>
  (method: string, path: string, json?: unknown): Promise<Response> =>
    gateway.fetch(
      new Request(`${BASE}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
        body: json === undefined ? undefined : JSON.stringify(json),
      }),
    )

/** Reads a JSON response, asserting its content type. */
export const readJson = async (response: Response): Promise<any> => {
  const type = response.headers.get('content-type') ?? ''
  if (!type.startsWith('application/json')) throw new Error(`expected JSON, got ${type}: ${await response.text()}`)
  return response.json()
}
