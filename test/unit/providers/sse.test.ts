import { describe, expect, it } from 'vitest'
import { UpstreamFailure } from '../../../src/core/upstream-failure'
import { readSse } from '../../../src/providers/shared/sse'
import { chunked, collect } from '../../helpers/stream-events'

const event = (size: number) => `data: ${'x'.repeat(size)}\n\n`
const bytes = (text: string) => new TextEncoder().encode(text)

describe('readSse size bound', () => {
  it('passes an event just under the bound, and any number of events that add up to far more', async () => {
    const nearBound = await collect(readSse(chunked(bytes(event(4000)), 512), 4096))
    expect(nearBound.map((message) => message.data.length)).toEqual([4000])
    const many = await collect(readSse(chunked(bytes(event(3000).repeat(50)), 700), 4096))
    expect(many).toHaveLength(50)
  })

  it('fails once an event passes the bound, without waiting for its end', async () => {
    async function* endless() {
      yield bytes('data: {"ok":1}\n\ndata: ')
      for (;;) yield bytes('y'.repeat(1024))
    }
    const seen: string[] = []
    const failure = await (async () => {
      for await (const message of readSse(endless(), 8192)) seen.push(message.data)
    })().catch((error: unknown) => error)
    expect(seen).toEqual(['{"ok":1}'])
    expect(failure).toBeInstanceOf(UpstreamFailure)
    expect((failure as UpstreamFailure).message).toBe('The provider sent an event larger than the gateway accepts (8 KiB)')
    expect((failure as UpstreamFailure).errorType).toBe('provider_unavailable')
  })
})
