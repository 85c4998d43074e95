/** Sticky sessions: a session's requests go to the endpoint that served it before, while it stays healthy. */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, type ScriptedReply, type TestGateway } from '../../../src/testing'

let harness: TestGateway | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
})

const failing: ScriptedReply = [{ type: 'http_error', status: 503 }]

/** A scripted provider whose answer the test switches. */
const switchable = () => {
  let reply: ScriptedReply = 'ok'
  const provider = scriptedProvider({ reply: (call) => (typeof reply === 'function' ? reply(call) : reply) })
  return Object.assign(provider, { answer: (next: ScriptedReply) => void (reply = next) })
}

const ask = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const response = await harness!.responses({ input: 'hi', ...body }, { headers: { 'x-service-metadata': 'enabled', ...headers } })
  const answer = await response.json()
  return { status: response.status, provider: answer.service_metadata?.endpoints.available.find((endpoint: { selected: boolean }) => endpoint.selected)?.provider, metadata: answer.service_metadata }
}

describe('sticky sessions', () => {
  it('hold a session on the endpoint that served it, release it when that one fails, and leave other requests alone', async () => {
    const alpha = switchable()
    const beta = switchable()
    harness = await createTestGateway({ providers: { alpha, beta } })
    alpha.answer(failing)
    // Alpha, first in order, fails: beta serves the session.
    expect((await ask({ session_id: 'conversation-1' })).provider).toBe('beta')
    alpha.answer('ok')
    const held = await ask({ session_id: 'conversation-1' })
    expect(held.provider).toBe('beta')
    expect(held.metadata).toMatchObject({ sticky: true, attempt: 1 })
    // The header names the session as well; another session, or none, routes as usual.
    expect((await ask({}, { 'x-session-id': 'conversation-1' })).provider).toBe('beta')
    expect((await ask({ session_id: 'conversation-2' })).provider).toBe('alpha')
    const none = await ask({})
    expect(none.provider).toBe('alpha')
    expect(none.metadata.sticky).toBeUndefined()
    // The caller's own order wins over the session's endpoint.
    expect((await ask({ session_id: 'conversation-1', provider: { order: ['alpha'] } })).provider).toBe('alpha')
    // Beta fails: the session moves to alpha, which served it, and stays there.
    beta.answer(failing)
    expect((await ask({ session_id: 'conversation-1' })).provider).toBe('alpha')
    beta.answer('ok')
    expect((await ask({ session_id: 'conversation-1' })).provider).toBe('alpha')
  })

  it('let go of an endpoint that was ejected for failing', async () => {
    const alpha = switchable()
    const beta = switchable()
    harness = await createTestGateway({ providers: { alpha, beta }, outlierDetection: { consecutiveFailures: 1, baseEjectionSeconds: 60 } })
    alpha.answer(failing)
    expect((await ask({ session_id: 's' })).provider).toBe('beta')
    alpha.answer('ok')
    // Beta fails once without the session: ejected.
    beta.answer(failing)
    expect((await ask({ provider: { only: ['beta'] } })).status).toBeGreaterThanOrEqual(500)
    beta.answer('ok')
    const released = await ask({ session_id: 's' })
    expect(released.provider).toBe('alpha')
    expect(released.metadata.sticky).toBe(false)
  })
})
