/**
 * `gateway.endStreams()`: at shutdown every stream in flight ends in-band (`response.failed`, then `[DONE]`) and its
 * upstream exchange is aborted, whether content was flowing, the response was committed with keep-alives, or the
 * stream was still waiting for its first content.
 */

import http, { type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { toNodeListener } from '../../../src/adapters/node'
import type { GatewayOptions } from '../../../src/gateway/options'
import type { ModelEntry } from '../../../src/engine/models'
import { bodyReader, hangsAfterFirstDelta, sseEventsOf } from '../../helpers/interrupted-stream'
import { createResponsesHarness, type ResponsesHarness } from '../../helpers/responses'
import { fixture, type Upstream, type UpstreamReply } from '../../helpers/upstream'

const MODEL = 'anthropic/claude-sonnet-4.5'
const SHUTDOWN = { code: 'server_error', message: 'The gateway is shutting down; retry the request' }

let harness: ResponsesHarness | undefined
const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
  await harness?.close()
  harness = undefined
})

const start = async (reply: () => UpstreamReply, options: Partial<GatewayOptions> = {}) => {
  harness = await createResponsesHarness({ anthropic: {} }, options)
  const upstream = harness.upstreams.anthropic!
  upstream.setHandler(reply)
  return { upstream, aborted: upstream.nextClientAbort() }
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
    const { aborted } = await start(hangsAfterFirstDelta)
    const response = await harness!.post({ model: MODEL, input: 'hi', stream: true })
    const reader = bodyReader(response.body!)
    await reader.until('response.output_text.delta')
    harness!.gateway.endStreams()
    const events = expectEndedInBand(await reader.rest())
    expect(events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)).toEqual(['The capital of France is **Paris**'])
    await aborted
  })

  it('ends a stream committed with keep-alives before any content, and aborts the waiting upstream', async () => {
    const { upstream, aborted } = await start(() => ({ shouldHang: true }), { streamCommitAfterMs: 0 })
    const response = await harness!.post({ model: MODEL, input: 'hi', stream: true })
    const reader = bodyReader(response.body!)
    await reader.until(': PROCESSING')
    await vi.waitFor(() => expect(upstream.requests).toHaveLength(1))
    harness!.gateway.endStreams('Maintenance window; retry in a minute')
    const events = expectEndedInBand(await reader.rest(), 'Maintenance window; retry in a minute')
    expect(events.map((event) => event.type ?? event)).toEqual(['response.created', 'response.in_progress', 'response.failed', '[DONE]'])
    await aborted
  })

  it('ends a stream still waiting for its first content, before the HTTP response was committed', async () => {
    const { upstream, aborted } = await start(() => ({ shouldHang: true }))
    const pending = harness!.post({ model: MODEL, input: 'hi', stream: true })
    await vi.waitFor(() => expect(upstream.requests).toHaveLength(1))
    harness!.gateway.endStreams()
    const response = await pending
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    expectEndedInBand(await response.text())
    await aborted
  })

  it('leaves finished streams alone and the gateway serving', async () => {
    const { upstream } = await start(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: fixture('anthropic', 'text.sse') }))
    const first = await (await harness!.post({ model: MODEL, input: 'hi', stream: true })).text()
    harness!.gateway.endStreams()
    expect(sseEventsOf(first).at(-2).type).toBe('response.completed')
    const second = await (await harness!.post({ model: MODEL, input: 'hi', stream: true })).text()
    expect(sseEventsOf(second).at(-2).type).toBe('response.completed')
    expect(upstream.abortCount()).toBe(0)
  })

  it('ends a stream served through the Node bridge in-band before the connection closes', async () => {
    const { aborted } = await start(hangsAfterFirstDelta)
    const server = http.createServer(toNodeListener(harness!.gateway))
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: 'hi', stream: true }),
    })
    const reader = bodyReader(response.body!)
    await reader.until('response.output_text.delta')
    harness!.gateway.endStreams()
    expectEndedInBand(await reader.rest())
    await aborted
  })

  it('ends an intern chat stream too', async () => {
    const models: ModelEntry[] = [{ slug: 'test/intern', name: 'Intern model', endpoints: [{ provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] }]
    harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models })
    await harness.gateway.admin.setAccountFlags(undefined, { interns: true })
    const alpha: Upstream = harness.upstreams.alpha!
    const lines = fixture('openai-chat', 'text.sse').toString('utf8').split('\n\n')
    alpha.setHandler(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [`${lines.slice(0, 3).join('\n\n')}\n\n`, 'data: [DONE]\n\n'],
      pause: { after: 1, until: new Promise(() => {}) },
    }))
    const aborted = alpha.nextClientAbort()
    const call = (method: string, path: string, json?: unknown) =>
      harness!.gateway.fetch(
        new Request(`http://gateway.test/api/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${harness!.key}`, 'content-type': 'application/json' },
          ...(json === undefined ? {} : { body: JSON.stringify(json) }),
        }),
      )
    const created = await (await call('POST', '/interns', { name: 'ada', model: 'test/intern', provision: true })).json()
    await vi.waitFor(async () => expect((await (await call('GET', `/interns/${created.id}`)).json()).status).toBe('running'))
    const response = await call('POST', `/interns/${created.id}/chat`, { input: 'Book me a flight' })
    const reader = bodyReader(response.body!)
    await reader.until('response.output_text.delta')
    harness.gateway.endStreams()
    expectEndedInBand(await reader.rest())
    await aborted
  })
})
