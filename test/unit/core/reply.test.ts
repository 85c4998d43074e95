import { describe, expect, it, vi } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import type { ChunkProducer } from '../../../src/core/event-stream'
import { eventsReply, json, jsonTextReply, replyStatus, responseReply, setReplyHeader, toResponse } from '../../../src/core/reply'

/** A producer that writes `count` numbered events, waiting whenever the sink asks it to. */
const numbered = (count: number, log: { stopped: boolean; waits: number }): ChunkProducer => (sink) => {
  const run = async () => {
    for (let index = 0; index < count; index++) {
      if (log.stopped) return
      if (!sink.write(`data: ${index}\n\n`)) {
        log.waits++
        await sink.ready()
      }
    }
    sink.close()
  }
  void run()
  return () => {
    log.stopped = true
  }
}

describe('JSON replies', () => {
  it('keep their text and become a Response with the same status, headers and body', async () => {
    const reply = jsonTextReply('{"a":"é"}', 201, { 'x-extra': 'yes' })

    expect(reply.text).toBe('{"a":"é"}')
    expect(replyStatus(reply)).toBe(201)
    const response = toResponse(reply)
    expect(response.constructor).toBe(Response)
    expect(response.status).toBe(201)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('x-extra')).toBe('yes')
    expect(await response.json()).toEqual({ a: 'é' })
  })

  it('serialise data once, with the JSON content type winning over a caller-given one', () => {
    const reply = json({ ok: true }, 200, { 'content-type': 'text/plain' })

    expect(reply.text).toBe('{"ok":true}')
    expect(reply.headers.get('content-type')).toBe('application/json')
  })
})

describe('event replies', () => {
  it('become a Response whose body is fed by the producer', async () => {
    const log = { stopped: false, waits: 0 }
    const response = toResponse(eventsReply(numbered(3, log), { 'content-type': 'text/event-stream' }))

    expect(response.constructor).toBe(Response)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    expect(await response.text()).toBe('data: 0\n\ndata: 1\n\ndata: 2\n\n')
  })

  it('hold the producer back while a web consumer does not read', async () => {
    const log = { stopped: false, waits: 0 }
    const reader = toResponse(eventsReply(numbered(100, log), {})).body!.getReader()
    await vi.waitFor(() => expect(log.waits).toBeGreaterThan(0))

    // Nothing read yet: only the stream's small queue was filled, and the producer waits.
    expect(log.waits).toBe(1)
    let text = ''
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      text += new TextDecoder().decode(value)
    }
    expect(text.split('\n\n').filter(Boolean)).toHaveLength(100)
  })

  it('stop the producer when a web consumer cancels', async () => {
    const log = { stopped: false, waits: 0 }
    const reader = toResponse(eventsReply(numbered(1_000, log), {})).body!.getReader()
    await reader.read()
    await reader.cancel()

    expect(log.stopped).toBe(true)
  })

  it('report a producer failure as a stream error', async () => {
    const response = toResponse(
      eventsReply((sink) => {
        sink.write('data: partial\n\n')
        queueMicrotask(() => sink.fail(new Error('producer bug')))
        return () => {}
      }, {}),
    )

    await expect(response.text()).rejects.toThrow('producer bug')
  })
})

describe('setReplyHeader', () => {
  it('sets the header on an own reply and on a Response, copying one whose headers are immutable', async () => {
    const own = setReplyHeader(json({}), 'x-request-id', 'r1')
    // A redirect's headers are immutable, as are those of a Response from fetch.
    const immutable = Response.redirect('http://localhost/elsewhere', 302)
    const copied = setReplyHeader(responseReply(new Response('body', { headers: { 'x-a': '1' } })), 'x-request-id', 'r2')
    const fromImmutable = setReplyHeader(responseReply(immutable), 'x-request-id', 'r3')

    expect(toResponse(own).headers.get('x-request-id')).toBe('r1')
    expect(toResponse(copied).headers.get('x-request-id')).toBe('r2')
    expect(toResponse(copied).headers.get('x-a')).toBe('1')
    expect(fromImmutable.kind === 'response' && fromImmutable.response).not.toBe(immutable)
    expect(toResponse(fromImmutable).headers.get('x-request-id')).toBe('r3')
  })
})

describe('gateway.fetch and gateway.reply', () => {
  it('fetch hands callers plain Responses, which host runtimes can serve natively', async () => {
    const gateway = createGateway({ logger: false })

    const response = await gateway.fetch(new Request('http://localhost/api/v1/keys'))

    expect(response.constructor).toBe(Response)
    expect(response.status).toBe(401)
    expect(response.headers.get('x-request-id')).toBeTruthy()
    expect(await response.json()).toMatchObject({ error: { code: 401 } })
    await gateway.close()
  })

  it('reply answers with JSON text, request id included, for hosts that write it out themselves', async () => {
    const gateway = createGateway({ logger: false })

    const reply = await gateway.reply(new Request('http://localhost/api/v1/keys'))

    expect(reply.kind).toBe('json')
    if (reply.kind !== 'json') return
    expect(reply.status).toBe(401)
    expect(reply.headers.get('x-request-id')).toBeTruthy()
    expect(JSON.parse(reply.text)).toMatchObject({ error: { code: 401 } })
    await gateway.close()
  })
})
