import type { Gateway } from '../../src/gateway/gateway'
import { silentLogger } from '../../src/core/logger'
import type { StorageDriver } from '../../src/storage/contract'
import { createTestGateway as createKitGateway, type TestGateway } from '../../src/testing'

export const BASE = 'http://gateway.test/api/v1'
/** A fixed master key for tests (base64 of 32 bytes). */
export const TEST_ENCRYPTION_KEY = 'Zm9yLXRlc3RzLW9ubHktMzItYnl0ZXMtbG9uZy1rZXk='

export type { TestGateway }

/** A gateway on the memory store with a default account, one management and one regular key (modelgate/testing's). */
export const createTestGateway = (options: { storage?: StorageDriver; basePath?: string; encryptionKeys?: string[] } = {}): Promise<TestGateway> =>
  createKitGateway({
    logger: silentLogger,
    encryptionKeys: options.encryptionKeys ?? [TEST_ENCRYPTION_KEY],
    ...(options.storage ? { storage: options.storage } : {}),
    ...(options.basePath === undefined ? {} : { basePath: options.basePath }),
  })

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
