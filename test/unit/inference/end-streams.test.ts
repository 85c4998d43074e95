/**
 * `gateway.endStreams()`: at shutdown every stream in flight ends in-band (`response.failed`, then `[DONE]`) and its
 * upstream exchange is aborted, whether content was flowing, the response was committed with keep-alives, or the
 * stream was still waiting for its first content.
 */

import { createSpendRepository } from '../../../src/repositories/spend-counters'
import { memoryStorage } from '../../../src/storage/memory'
import { once } from 'node:events'
import http, { type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { toNodeListener } from '../../../src/adapters/node'
import { createTestGateway, gate, scriptedProvider, TEST_MODEL, withScriptedProviders, type ScriptedAnswer, type TestGateway, type TestGatewayOptions } from '../../../src/testing'
import { silentLogger } from '../../../src/core/logger'
import { createSecretBox } from '../../../src/core/secrets'
import type { ModelEntry } from '../../../src/engine/models'
import type { ProviderConfig } from '../../../src/engine/providers'
import type { InferenceRequest } from '../../../src/engine/request'
import { createRequestDeadline } from '../../../src/engine/request-deadline'
import { planAttempts } from '../../../src/engine/routing'
import { createInferenceService } from '../../../src/engine/service'
import { createFeatureSettings } from '../../../src/features/settings'
import { engineStages } from '../../../src/engine/stages'
import type { SessionEvent } from '../../../src/engine/session-events'
import { openSession } from '../../../src/engine/stream-session'
import { ADAPTERS } from '../../../src/providers'
import { bodyReader, sseEventsOf } from '../../helpers/interrupted-stream'

const SHUTDOWN = { code: 'server_error', message: 'The gateway is shutting down; retry the request' }
const FIRST_DELTA = 'The capital of France is **Paris**'

let harness: TestGateway | undefined
const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  await harness?.close()
  harness = undefined
})

/** A model that waits at a gate nobody opens: after its first text delta, or before any content. */
const stalled = (afterFirstDelta: boolean) => {
  const stall = gate()
  const answer: ScriptedAnswer = [...(afterFirstDelta ? [{ type: 'text' as const, text: FIRST_DELTA }] : []), { type: 'wait', until: stall }, { type: 'text', text: ' never sent' }]
  return { stall, answer }
}

/** Starts a gateway on one scripted model; `aborted` resolves once the gateway aborts the model's first exchange. */
const start = async (answer: ScriptedAnswer, options: TestGatewayOptions = {}) => {
  const model = scriptedProvider({ reply: answer })
  const aborted = model.nextCall().then((call) => (call.signal.aborted ? undefined : once(call.signal, 'abort')))
  harness = await createTestGateway({ providers: { scripted: model }, ...options })
  return { model, aborted }
}

const expectEndedInBand = (text: string, message = SHUTDOWN.message) => {
  const events = sseEventsOf(text)
  expect(events.at(-1)).toBe('[DONE]')
  const failed = events.at(-2)
  expect(failed.type).toBe('response.failed')
  expect(failed.response).toMatchObject({ status: 'failed', error: { code: 'server_error', message }, error_type: 'server' })
  expect(events[0].type).toBe('response.created')
  expect(events.map((event) => event.sequence_number).slice(0, -1)).toEqual(events.slice(0, -1).map((_, index) => index))
  return events
}

describe('gateway.endStreams()', () => {
  it('ends a stream that is sending content with response.failed and [DONE], and aborts its upstream', async () => {
    const { aborted } = await start(stalled(true).answer)
    const response = await harness!.responses({ model: TEST_MODEL, input: 'hi', stream: true })
    const reader = bodyReader(response.body!)
    await reader.until('response.output_text.delta')
    harness!.gateway.endStreams()
    const events = expectEndedInBand(await reader.rest())
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).toEqual([FIRST_DELTA])
    await aborted
  })

  it('ends a stream committed with keep-alives before any content, and aborts the waiting upstream', async () => {
    const { stall, answer } = stalled(false)
    const { aborted } = await start(answer, { streamCommitAfterMs: 0 })
    const response = await harness!.responses({ model: TEST_MODEL, input: 'hi', stream: true })
    const reader = bodyReader(response.body!)
    await reader.until(': PROCESSING')
    await stall.reached
    harness!.gateway.endStreams('Maintenance window; retry in a minute')
    const events = expectEndedInBand(await reader.rest(), 'Maintenance window; retry in a minute')
    expect(events.map((event) => event.type ?? event)).toEqual(['response.created', 'response.in_progress', 'response.failed', '[DONE]'])
    await aborted
  })

  it('ends a stream still waiting for its first content, before the HTTP response was committed', async () => {
    const { stall, answer } = stalled(false)
    const { aborted } = await start(answer)
    const pending = harness!.responses({ model: TEST_MODEL, input: 'hi', stream: true })
    await stall.reached
    harness!.gateway.endStreams()
    const response = await pending
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    expectEndedInBand(await response.text())
    await aborted
  })

  it('leaves finished streams alone and the gateway serving', async () => {
    const { model } = await start([{ type: 'text', text: FIRST_DELTA }])
    const first = await (await harness!.responses({ model: TEST_MODEL, input: 'hi', stream: true })).text()
    harness!.gateway.endStreams()
    expect(sseEventsOf(first).at(-2).type).toBe('response.completed')
    const second = await (await harness!.responses({ model: TEST_MODEL, input: 'hi', stream: true })).text()
    expect(sseEventsOf(second).at(-2).type).toBe('response.completed')
    expect(model.calls.filter((call) => call.signal.aborted)).toHaveLength(0)
  })

  it('ends a stream served through the Node bridge in-band before the connection closes', async () => {
    const { aborted } = await start(stalled(true).answer)
    const server = http.createServer(toNodeListener(harness!.gateway))
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.regularKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: TEST_MODEL, input: 'hi', stream: true }),
    })
    const reader = bodyReader(response.body!)
    await reader.until('response.output_text.delta')
    harness!.gateway.endStreams()
    expectEndedInBand(await reader.rest())
    await aborted
  })

  it('ends an intern chat stream too', async () => {
    const model = scriptedProvider({ reply: stalled(true).answer })
    harness = await createTestGateway({ providers: { alpha: model } })
    await harness.gateway.admin.setAccountFlags(undefined, { interns: true })
    const aborted = model.nextCall().then((call) => once(call.signal, 'abort'))
    const call = (method: string, path: string, json?: unknown) => harness!.call(method, path, { key: harness!.regularKey, ...(json === undefined ? {} : { json }) })
    const created = await (await call('POST', '/interns', { name: 'ada', model: TEST_MODEL, provision: true })).json()
    await vi.waitFor(async () => expect((await (await call('GET', `/interns/${created.id}`)).json()).status).toBe('running'))
    const response = await call('POST', `/interns/${created.id}/chat`, { input: 'Book me a flight' })
    const reader = bodyReader(response.body!)
    await reader.until('response.output_text.delta')
    harness.gateway.endStreams()
    expectEndedInBand(await reader.rest())
    await aborted
  })
})

/**
 * What reaches the session's observers (the spend settlement, the usage ledger) when the gateway ends a stream: the
 * failure says it was the shutdown, whatever message the host gave, so the charging can tell it from an upstream's.
 */
describe('the end of a stream the gateway shut down, as its session reports it', () => {
  const sessionOf = (answer: ScriptedAnswer) => {
    const options = withScriptedProviders({ providers: { scripted: scriptedProvider({ reply: answer }) } })
    const service = createInferenceService({
      providers: options.providers as Record<string, ProviderConfig>,
      models: options.models as ModelEntry[],
      transport: options.transport!,
      adapters: ADAPTERS,
      secrets: createSecretBox([]),
      endUserSecret: 'end-user-secret',
      logger: silentLogger,
      spendRepository: createSpendRepository(memoryStorage()),
      features: (providers) => createFeatureSettings({}, providers),
      stages: engineStages({}),
    })
    const attempts = planAttempts(service.models, service.providers, { models: [TEST_MODEL], preferences: null, parametersUsed: [], credentials: [], callerKeyHash: 'key', callerUserId: 'user' })
    // Only what a session reads: no spend is reserved or settled here.
    const request = {
      body: { model: TEST_MODEL, input: 'hi', stream: true },
      attempts,
      requestedModel: TEST_MODEL,
      endUserId: 'end-user',
      requestId: 'request',
      signal: new AbortController().signal,
      deadline: createRequestDeadline(service.requestTimeoutMs),
      isMetadataRequested: false,
      attemptReports: [],
      plugins: [],
      pipeline: [],
    } as unknown as InferenceRequest
    const events: SessionEvent[] = []
    // Started as soon as it opens: before content, that is once the shutdown ended the wait for it.
    const closed = openSession(service, request).then(
      (session) => new Promise<void>((resolve) => session.start({ write: (event) => events.push(event) > 0, ready: async () => {}, close: () => resolve(), fail: () => resolve() })),
    )
    return { service, events, closed }
  }

  it.each([
    ['after content', true],
    ['before content', false],
  ])('%s: the failure is marked as the shutdown, with the host message', async (_, afterFirstDelta) => {
    const { stall, answer } = stalled(afterFirstDelta)
    const { service, events, closed } = sessionOf(answer)
    await stall.reached
    service.streams.endAll('Maintenance window; retry in a minute')
    await closed
    const finished = events.at(-1) as Extract<SessionEvent, { type: 'finished' }>
    expect(finished.type).toBe('finished')
    expect(finished.result.error).toEqual({ status: 503, errorType: 'server', message: 'Maintenance window; retry in a minute', isShutdown: true })
  })
})
