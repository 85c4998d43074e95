import { describe, expect, it, vi } from 'vitest'
import { EventStreamResponse, type ChunkProducer, type ChunkSink } from '../../../src/core/event-stream-response'
import { materialize } from '../../../src/core/materialize'

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

describe('EventStreamResponse', () => {
  it('is a Response whose body is fed by the producer', async () => {
    const log = { stopped: false, waits: 0 }
    const response = new EventStreamResponse(numbered(3, log), { headers: { 'content-type': 'text/event-stream' } })

    expect(response).toBeInstanceOf(Response)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    expect(response.bodyUsed).toBe(false)
    expect(await response.text()).toBe('data: 0\n\ndata: 1\n\ndata: 2\n\n')
    expect(response.bodyUsed).toBe(true)
    await expect(response.text()).rejects.toBeInstanceOf(TypeError)
  })

  it('holds the producer back while a web consumer does not read', async () => {
    const log = { stopped: false, waits: 0 }
    const response = new EventStreamResponse(numbered(100, log), { headers: {} })
    const reader = response.body.getReader()
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

  it('stops the producer when a web consumer cancels', async () => {
    const log = { stopped: false, waits: 0 }
    const response = new EventStreamResponse(numbered(1_000, log), { headers: {} })
    const reader = response.body.getReader()
    await reader.read()
    await reader.cancel()

    expect(log.stopped).toBe(true)
  })

  it('starts once: a second start or a body after start is refused, and it cannot be cloned', () => {
    const log = { stopped: false, waits: 0 }
    const response = new EventStreamResponse(numbered(1, log), { headers: {} })
    const sink: ChunkSink = { write: () => true, ready: async () => {}, close: () => {}, fail: () => {} }

    response.start(sink)

    expect(response.bodyUsed).toBe(true)
    expect(() => response.start(sink)).toThrow(TypeError)
    expect(() => response.body).toThrow(TypeError)
    expect(() => new EventStreamResponse(numbered(1, log), { headers: {} }).clone()).toThrow(TypeError)
  })

  it('reports a producer failure as a stream error', async () => {
    const response = new EventStreamResponse(
      (sink) => {
        sink.write('data: partial\n\n')
        queueMicrotask(() => sink.fail(new Error('producer bug')))
        return () => {}
      },
      { headers: {} },
    )

    await expect(response.text()).rejects.toThrow('producer bug')
  })

  it('materializes into a plain Response with the same status, headers and events', async () => {
    const log = { stopped: false, waits: 0 }
    const plain = materialize(new EventStreamResponse(numbered(2, log), { status: 200, headers: { 'x-test': '1' } }))

    expect(plain.constructor).toBe(Response)
    expect(plain.headers.get('x-test')).toBe('1')
    expect(await plain.text()).toBe('data: 0\n\ndata: 1\n\n')
  })
})
