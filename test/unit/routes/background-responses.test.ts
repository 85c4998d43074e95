/**
 * Background responses (docs/decisions.md, Background runs): `background: true` answers the queued Response object at
 * once and runs detached; `GET /responses/{id}` polls it and, with `stream=true&starting_after=N`, replays and follows
 * its events; `POST /responses/{id}/cancel` stops it here or in another gateway on the same store; a run whose gateway
 * was abandoned is taken over by another's sweep; each run leaves exactly one usage record.
 */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, gate, readEvents, scriptedProvider, TEST_MODEL, type ScriptedProvider, type TestGateway } from '../../../src/testing'
import { memoryStorage } from '../../../src/storage/memory'
import type { StorageDriver } from '../../../src/storage/contract'
import { expectOpenResponsesObject, expectOpenResponsesStream } from '../../helpers/open-responses'

const REPLY = [{ type: 'text' as const, text: ['Hel', 'lo'] }, { type: 'usage' as const, inputTokens: 5, outputTokens: 2 }]

/** Gateways on one store share its encryption key, as a deployment's processes do. */
const KEYS = ['ab'.repeat(32)]

const opened: TestGateway[] = []
afterEach(async () => {
  // Gateways sharing a store close it once, last.
  for (const gateway of opened.splice(0).reverse()) await gateway.close()
})

/** A store another gateway shares: closing through this view leaves it open. */
const shared = (storage: StorageDriver): StorageDriver => Object.assign(Object.create(storage) as StorageDriver, { close: async () => {} })

const start = async (providers: Record<string, ScriptedProvider>, options: Parameters<typeof createTestGateway>[0] = {}) => {
  const gateway = await createTestGateway({ providers, storedResponses: { sweepIntervalMs: false, background: { sweepIntervalMs: false, flushIntervalMs: 5 } }, ...options })
  opened.push(gateway)
  return gateway
}

const get = (t: TestGateway, id: string, query = '', key = t.regularKey) => t.call('GET', `/responses/${id}${query}`, { key })
/** Follows the run to its end (the stream ends with it) and answers its final object. */
const settled = async (t: TestGateway, id: string) => {
  await readEvents(await get(t, id, '?stream=true'))
  return (await get(t, id)).json()
}
/** Reads a stream's events one at a time, as they come. */
const eventReader = (response: Response) => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffered = ''
  const next = async (): Promise<Record<string, any>> => {
    for (;;) {
      const end = buffered.indexOf('\n\n')
      if (end >= 0) {
        const block = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        const data = block.split('\n').find((line) => line.startsWith('data: '))
        if (data && data !== 'data: [DONE]') return JSON.parse(data.slice(6))
        continue
      }
      const { value, done } = await reader.read()
      if (done) throw new Error('the stream ended')
      buffered += value
    }
  }
  return {
    async until(predicate: (event: Record<string, any>) => boolean) {
      for (;;) {
        const event = await next()
        if (predicate(event)) return event
      }
    },
    cancel: () => reader.cancel(),
  }
}

const generations = async (storage: StorageDriver) => (await storage.list('generations')).items.length

describe('background responses', () => {
  it('answers queued at once, runs detached to completed, and is billed once', async () => {
    const storage = memoryStorage()
    const t = await start({ alpha: scriptedProvider({ reply: REPLY }) }, { storage })
    const response = await t.responses({ model: TEST_MODEL, input: 'Hi', background: true })
    expect(response.status).toBe(200)
    const queued = await response.json()
    expect(queued).toMatchObject({ object: 'response', status: 'queued', background: true, store: true, output: [] })
    expect(queued.id).toMatch(/^resp_/)
    expectOpenResponsesObject(queued)

    const done = await settled(t, queued.id)
    expect(done).toMatchObject({ id: queued.id, status: 'completed', background: true, created_at: queued.created_at })
    expect(done.output[0].content[0].text).toBe('Hello')
    expectOpenResponsesObject(done)
    expect(await generations(storage)).toBe(1)
    // The answer is stored: it is continued and its input listed as any stored response's.
    expect((await (await t.call('GET', `/responses/${queued.id}/input_items`, { key: t.regularKey })).json()).data).toHaveLength(1)
    const next = await t.responses({ model: TEST_MODEL, input: 'More', previous_response_id: queued.id })
    expect(next.status).toBe(200)
  })

  it('streams from response.created (queued); the client leaving changes nothing; starting_after replays the rest', async () => {
    const thinking = gate()
    const t = await start({ alpha: scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'wait', until: thinking }, { type: 'text', text: 'lo' }] }) })
    const streamed = await t.responses({ model: TEST_MODEL, input: 'Hi', background: true, stream: true })
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const reader = eventReader(streamed)
    const first = await reader.until(() => true)
    expect(first).toMatchObject({ type: 'response.created', sequence_number: 0, response: { status: 'queued', background: true } })
    const delta = await reader.until((event) => event.type === 'response.output_text.delta')
    await reader.cancel()
    thinking.open()
    const id = first.response.id as string

    const rest = await readEvents(await get(t, id, `?stream=true&starting_after=${delta.sequence_number}`))
    expect(rest.map((event) => event.sequence_number)).toEqual(rest.map((_, index) => delta.sequence_number + 1 + index))
    expect(rest.at(-1)).toMatchObject({ type: 'response.completed', response: { id, status: 'completed', background: true } })
    const all = await readEvents(await get(t, id, '?stream=true'))
    expect(all.map((event) => event.type).slice(0, 3)).toEqual(['response.created', 'response.queued', 'response.in_progress'])
    expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index))
    expectOpenResponsesStream(all)
    expect((await get(t, id)).status).toBe(200)
  })

  it('fails a run the engine refuses, with the reason on the response', async () => {
    const t = await start({ alpha: scriptedProvider({ reply: [{ type: 'http_error', status: 400, message: 'bad prompt' }] }) })
    const queued = await (await t.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    const done = await settled(t, queued.id)
    expect(done.status).toBe('failed')
    expect(done.error).toMatchObject({ code: expect.any(String), message: expect.any(String) })
  })
})

describe('response cache', () => {
  it('never answers a background run from the cache: each one reaches the upstream', async () => {
    const alpha = scriptedProvider({ reply: REPLY })
    const t = await start({ alpha }, { responseCache: {} })
    for (let round = 0; round < 2; round++) {
      const queued = await (await t.responses({ model: TEST_MODEL, input: 'Hi', background: true }, { headers: { 'x-modelgate-cache-ttl': '60' } })).json()
      expect(await settled(t, queued.id)).toMatchObject({ status: 'completed' })
    }
    expect(alpha.calls).toHaveLength(2)
  })
})

describe('cancel', () => {
  it('stops a run of this gateway at once, answers cancelled (again when repeated), and bills what it used once', async () => {
    const storage = memoryStorage()
    const thinking = gate()
    const alpha = scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'usage', inputTokens: 5, outputTokens: 1 }, { type: 'wait', until: thinking }, { type: 'text', text: 'lo' }] })
    const t = await start({ alpha }, { storage })
    const queued = await (await t.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    await thinking.reached
    const stopped = new Promise((resolve) => alpha.lastCall!.signal.addEventListener('abort', resolve, { once: true }))
    const cancel = await t.call('POST', `/responses/${queued.id}/cancel`, { key: t.regularKey })
    expect(cancel.status).toBe(200)
    const cancelled = await cancel.json()
    expect(cancelled).toMatchObject({ id: queued.id, status: 'cancelled', background: true })
    expectOpenResponsesObject(cancelled)
    await stopped
    const again = await t.call('POST', `/responses/${queued.id}/cancel`, { key: t.regularKey })
    expect(await again.json()).toMatchObject({ id: queued.id, status: 'cancelled' })
    expect(await settled(t, queued.id)).toMatchObject({ status: 'cancelled' })
    await t.gateway.flushSpend()
    expect(await generations(storage)).toBe(1)
    thinking.open()
  })

  it('stops a run of another gateway on the same store at its next heartbeat', async () => {
    const storage = memoryStorage()
    const thinking = gate()
    const alpha = scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'wait', until: thinking }, { type: 'text', text: 'lo' }] })
    const background = { sweepIntervalMs: false as const, flushIntervalMs: 5, leaseTtlMs: 30 }
    const first = await start({ alpha }, { storage: shared(storage), encryptionKeys: KEYS, storedResponses: { sweepIntervalMs: false, background } })
    const second = await start({ alpha: scriptedProvider({ reply: 'unused' }) }, { storage: shared(storage), encryptionKeys: KEYS, storedResponses: { sweepIntervalMs: false, background } })
    const queued = await (await first.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    await thinking.reached
    const stopped = new Promise((resolve) => alpha.lastCall!.signal.addEventListener('abort', resolve, { once: true }))
    const cancel = await second.call('POST', `/responses/${queued.id}/cancel`, { key: first.regularKey })
    expect(await cancel.json()).toMatchObject({ id: queued.id, status: 'cancelled' })
    await stopped
    thinking.open()
  })

  it('is a 400 for a finished run and a 404 for another workspace', async () => {
    const t = await start({ alpha: scriptedProvider({ reply: REPLY }) })
    const queued = await (await t.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    await settled(t, queued.id)
    const finished = await t.call('POST', `/responses/${queued.id}/cancel`, { key: t.regularKey })
    expect(finished.status).toBe(400)
    expect((await finished.json()).error.message).toBe('Cannot cancel a response that is already completed')
    const workspace = await t.gateway.admin.createWorkspace(undefined, { name: 'Other', slug: 'other' })
    const other = (await t.gateway.admin.createKey({ kind: 'regular', name: 'other', workspaceId: workspace.id })).key
    expect((await t.call('POST', `/responses/${queued.id}/cancel`, { key: other })).status).toBe(404)
    expect((await get(t, queued.id, '', other)).status).toBe(404)
    expect((await get(t, queued.id, '?stream=true', other)).status).toBe(404)
  })
})

describe('a run whose gateway was abandoned', () => {
  it('is taken over by another gateway’s sweep, run again from the start and billed once', async () => {
    const storage = memoryStorage()
    const thinking = gate()
    // The first gateway stands for a process that died: it never renews in time and writes no usage record.
    const first = await start(
      { alpha: scriptedProvider({ reply: [{ type: 'text', text: 'Lost' }, { type: 'wait', until: thinking }] }) },
      { storage: shared(storage), encryptionKeys: KEYS, ledger: { enabled: false }, storedResponses: { sweepIntervalMs: false, background: { sweepIntervalMs: false, flushIntervalMs: 5, leaseTtlMs: 60_000 } } },
    )
    const queued = await (await first.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    await thinking.reached
    // The second gateway's clock is past the first one's lease: to it, that process is gone.
    const later = () => new Date(Date.now() + 3_600_000)
    const second = await start(
      { alpha: scriptedProvider({ reply: REPLY }) },
      { storage: shared(storage), encryptionKeys: KEYS, now: later, storedResponses: { sweepIntervalMs: false, background: { sweepIntervalMs: 5, flushIntervalMs: 5 } } },
    )
    const done = await settled(second, queued.id)
    expect(done).toMatchObject({ id: queued.id, status: 'completed' })
    expect(done.output[0].content[0].text).toBe('Hello')
    expect(await generations(storage)).toBe(1)
    // The abandoned run, let go, finds itself taken over: it neither ends the record nor stores its answer.
    const abandonedEnds = get(first, queued.id, '?stream=true').then(readEvents)
    thinking.open()
    await abandonedEnds
    expect(await (await get(second, queued.id)).json()).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'Hello' }] }] })
    expect((await second.call('GET', `/responses/${queued.id}/input_items`, { key: second.regularKey })).status).toBe(200)
  })
})

describe('a run lost after it was billed', () => {
  it('is failed by the takeover rather than run (and billed) again', async () => {
    const storage = memoryStorage()
    const first = await start({ alpha: scriptedProvider({ reply: REPLY }) }, { storage: shared(storage), encryptionKeys: KEYS })
    const queued = await (await first.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    await settled(first, queued.id)
    expect(await generations(storage)).toBe(1)
    // As the store would hold it had its process died between the usage record and the record's end.
    const record = (await storage.get<Record<string, any>>('background_runs', queued.id))!
    const lost = { ...record.data, status: 'in_progress', lease: { holder: 'gone', expiresAt: '2000-01-01T00:00:00.000Z' } }
    await storage.update('background_runs', queued.id, record.version, { id: queued.id, data: lost, indexes: { status: 'in_progress' }, sortKey: record.sortKey })
    const second = await start(
      { alpha: scriptedProvider({ reply: REPLY }) },
      { storage: shared(storage), encryptionKeys: KEYS, storedResponses: { sweepIntervalMs: false, background: { sweepIntervalMs: 5, flushIntervalMs: 5 } } },
    )
    const failed = await settled(second, queued.id)
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'server_error', message: 'The gateway running this response stopped after it was billed; its output was lost' } })
    expect(await generations(storage)).toBe(1)
  })
})

describe('gateway close', () => {
  it('does not wait for a detached run: the run stops and is failed with the reason, billed once for what it used', async () => {
    const storage = memoryStorage()
    const thinking = gate()
    const closing = await createTestGateway({
      providers: { alpha: scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'wait', until: thinking }] }) },
      storage: shared(storage),
      encryptionKeys: KEYS,
      storedResponses: { sweepIntervalMs: false, background: { sweepIntervalMs: false, flushIntervalMs: 5 } },
    })
    const queued = await (await closing.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    await thinking.reached
    await closing.close()
    const reader = await start({ alpha: scriptedProvider({ reply: 'unused' }) }, { storage: shared(storage), encryptionKeys: KEYS })
    const failed = await (await get(reader, queued.id, '', closing.regularKey)).json()
    expect(failed).toMatchObject({ id: queued.id, status: 'failed', error: { code: 'server_error', message: 'The gateway running this response shut down; create it again' } })
    expect(await generations(storage)).toBe(1)
    thinking.open()
  })
})

describe('delete', () => {
  it('stops a running background response and removes it, its events and its answer', async () => {
    const thinking = gate()
    const alpha = scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'wait', until: thinking }] })
    const t = await start({ alpha })
    const queued = await (await t.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    await thinking.reached
    const stopped = new Promise((resolve) => alpha.lastCall!.signal.addEventListener('abort', resolve, { once: true }))
    const deleted = await t.call('DELETE', `/responses/${queued.id}`, { key: t.regularKey })
    expect(await deleted.json()).toEqual({ id: queued.id, object: 'response', deleted: true })
    await stopped
    expect((await get(t, queued.id)).status).toBe(404)
    expect((await get(t, queued.id, '?stream=true')).status).toBe(404)
    expect((await t.call('DELETE', `/responses/${queued.id}`, { key: t.regularKey })).status).toBe(404)
    thinking.open()
  })
})

describe('retention', () => {
  it('reads a background response as absent once the stored responses’ retention ran out', async () => {
    let clock = new Date('2026-01-01T00:00:00Z')
    const t = await start({ alpha: scriptedProvider({ reply: REPLY }) }, { now: () => clock, storedResponses: { sweepIntervalMs: false, retentionDays: 1, background: { sweepIntervalMs: false, flushIntervalMs: 5 } } })
    const queued = await (await t.responses({ model: TEST_MODEL, input: 'Hi', background: true })).json()
    expect(await settled(t, queued.id)).toMatchObject({ status: 'completed' })
    clock = new Date('2026-01-03T00:00:00Z')
    expect((await get(t, queued.id)).status).toBe(404)
    expect((await t.call('POST', `/responses/${queued.id}/cancel`, { key: t.regularKey })).status).toBe(404)
  })
})

describe('refusals', () => {
  it('needs stored responses, and store left out or true', async () => {
    const plain = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: 'Hi' }) } })
    opened.push(plain)
    const off = await plain.responses({ model: TEST_MODEL, input: 'Hi', background: true })
    expect(off.status).toBe(400)
    expect((await off.json()).error.message).toMatch(/^body\.background: /)
    const t = await start({ alpha: scriptedProvider({ reply: 'Hi' }) })
    const unstored = await t.responses({ model: TEST_MODEL, input: 'Hi', background: true, store: false })
    expect(unstored.status).toBe(400)
    expect((await unstored.json()).error.message).toBe('body.background: a background response is a stored one; leave store out or send true')
    const workspace = await t.gateway.admin.createWorkspace(undefined, { name: 'Unstored', slug: 'unstored', isResponseStorageEnabled: false })
    const key = (await t.gateway.admin.createKey({ kind: 'regular', name: 'unstored', workspaceId: workspace.id })).key
    const refused = await t.responses({ model: TEST_MODEL, input: 'Hi', background: true }, { key })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toMatch(/^body\.background: this workspace does not store responses \(its is_response_storage_enabled is false\)/)
  })

  it('refuses at once, queueing nothing, what a plain request would be refused before any upstream call', async () => {
    const alpha = scriptedProvider({ reply: 'Hi' })
    const storage = memoryStorage()
    const t = await start({ alpha }, { storage })
    const unknown = await t.responses({ model: 'nobody/no-such-model', input: 'Hi', background: true })
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error.message).toContain('nobody/no-such-model')
    const unhonoured = await t.responses({ model: TEST_MODEL, input: 'Hi', background: true, service_tier: 'flex' })
    expect(unhonoured.status).toBe(400)
    expect(alpha.calls).toHaveLength(0)
    expect((await storage.list('background_runs')).items).toEqual([])
    // Nothing ran, so nothing is billed or recorded (only a guardrail's refusal leaves a record, as for a plain request).
    expect(await generations(storage)).toBe(0)
  })

  it('streams only a background response again, and cancels only one', async () => {
    const t = await start({ alpha: scriptedProvider({ reply: 'Hi' }) })
    const whole = await (await t.responses({ model: TEST_MODEL, input: 'Hi' })).json()
    const stream = await get(t, whole.id, '?stream=true')
    expect(stream.status).toBe(400)
    expect((await stream.json()).error.message).toMatch(/^query\.stream: /)
    const cancel = await t.call('POST', `/responses/${whole.id}/cancel`, { key: t.regularKey })
    expect(cancel.status).toBe(400)
    expect((await get(t, whole.id, '?starting_after=3')).status).toBe(400)
  })
})
