/**
 * A BYOK key this gateway cannot decrypt (sealed with a master key it was not given): the caller gets a clear,
 * non-5xx error naming only their credential; the master-key id goes to the log; a shared key still serves.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { createSecretBox, generateMasterKey } from '../../../src/core/secrets'
import { TEST_ENCRYPTION_KEY } from '../../helpers/gateway'
import { createRecordingLogger } from '../../helpers/logger'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { jsonFixture } from '../../helpers/upstream'

const MODEL = 'meta-llama/llama-3.3-70b-instruct'
const BYOK_KEY = 'byok-sealed-elsewhere-7f3a9c2e51d04b68a1'

let harness: ResponsesHarness | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

/** A credential sealed with the harness's key, then a second gateway on the same store with only another key. */
const withForeignKeyGateway = async (sharedKey: boolean) => {
  harness = await createResponsesHarness({ groq: sharedKey ? {} : { apiKey: null } })
  const groq = harness.upstreams.groq!
  groq.setHandler(() => jsonFixture('openai-chat', 'text.json'))
  const { id } = await harness.addByok({ provider: 'groq', key: BYOK_KEY })
  const { logger, entries } = createRecordingLogger()
  const other = createGateway({
    storage: harness.gateway.storage,
    logger,
    encryptionKeys: [generateMasterKey()],
    providers: { groq: { baseURL: groq.url, ...(sharedKey ? { apiKey: 'sk-shared-groq-0123456789abcdef' } : {}) } },
  })
  const response = await other.fetch(
    new Request('http://gateway.test/api/v1/responses', {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: 'hi' }),
    }),
  )
  return { id, response, entries, groq }
}

describe('a BYOK key sealed with a master key this gateway does not have', () => {
  it('answers 422 naming the credential, not the master key, and logs the key id without a stack', async () => {
    const { id, response, entries, groq } = await withForeignKeyGateway(false)
    const kid = await createSecretBox([TEST_ENCRYPTION_KEY]).primaryKeyId()
    expect(response.status).toBe(422)
    const text = await response.text()
    expect(JSON.parse(text)).toEqual({
      error: {
        code: 422,
        message: `BYOK credential ${id} (Groq) cannot be decrypted by this gateway; store the key again with PATCH /byok/${id}, or ask the operator to configure the encryption key it was sealed with`,
      },
    })
    expect(text).not.toContain(kid)
    expect(groq.requests).toHaveLength(0)
    const logged = entries.filter((entry) => entry.message === 'a stored BYOK key cannot be opened')
    expect(logged).toEqual([
      {
        level: 'error',
        message: 'a stored BYOK key cannot be opened',
        fields: { requestId: expect.any(String), credentialId: id, keyId: kid, reason: `A stored secret was sealed with encryption key ${kid}, which is not configured` },
      },
    ])
    expect(JSON.stringify(entries)).not.toContain(BYOK_KEY)
    expect(JSON.stringify(entries)).not.toContain('stack')
  })

  it('falls back to the shared key when there is one', async () => {
    const { response, groq } = await withForeignKeyGateway(true)
    expect(response.status).toBe(200)
    expect(groq.requests.map((request) => request.headers.authorization)).toEqual(['Bearer sk-shared-groq-0123456789abcdef'])
  })
})
