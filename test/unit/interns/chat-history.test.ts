/**
 * Long conversations stay bounded: 25 chat turns of about 0.9 MB each, with the intern's state on the
 * embedded file store, against a loopback upstream that records what it got.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { DEFAULT_HISTORY_LIMITS } from '../../../src/interns/history'
import type { ModelEntry } from '../../../src/engine/models'
import { openFileStorage } from '../../../src/storage/file'
import { callAs, readJson } from '../../helpers/gateway'
import { createResponsesHarness, readSseEvents, type ResponsesHarness } from '../../helpers/responses'
import type { UpstreamReply } from '../../helpers/upstream'

// A context over 8k tokens: on 8k or less, context compression (on by default there) would cut the 0.9 MB turns.
const MODELS: ModelEntry[] = [
  { slug: 'test/intern', name: 'Intern model', endpoints: [{ provider: 'alpha', model: 'alpha-model', contextLength: 1_000_000, pricing: { prompt: 0, completion: 0 } }] },
]
const TURNS = 25
const TURN_BYTES = 900_000
const MIB = 1024 * 1024
/** What a request carries besides the conversation: model, instructions, the pause tool. */
const REQUEST_OVERHEAD = 16 * 1024

let harness: ResponsesHarness | undefined
let directory: string | undefined
afterEach(async () => {
  await harness?.close()
  harness = undefined
  if (directory) await rm(directory, { recursive: true, force: true })
  directory = undefined
})

const reply = (text: string): UpstreamReply => ({
  status: 200,
  headers: { 'content-type': 'text/event-stream' },
  chunks: [
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'alpha-model', choices: [{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }] })}\n\n`,
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'alpha-model', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`,
    'data: [DONE]\n\n',
  ],
})

const start = async (options: Parameters<typeof createResponsesHarness>[1] = {}) => {
  harness = await createResponsesHarness({ alpha: { api: 'openai-chat' } }, { models: MODELS, ...options })
  await harness.gateway.admin.setAccountFlags(undefined, { interns: true })
  const call = callAs(harness.gateway, harness.key)
  const intern = await readJson(await call('POST', '/interns', { name: 'ada', model: 'test/intern', provision: true }))
  await expect.poll(async () => (await readJson(await call('GET', `/interns/${intern.id}`))).status).toBe('running')
  harness.upstreams.alpha!.setHandler(() => reply('Noted.'))
  const chat = async (input: string) => {
    const response = await call('POST', `/interns/${intern.id}/chat`, { input })
    expect(response.status).toBe(200)
    const { events } = await readSseEvents(response)
    expect(events.at(-2)?.data.type).toBe('response.completed')
  }
  return { intern, chat, upstream: harness.upstreams.alpha! }
}

describe('intern chat history', () => {
  it(`stays within its byte limit over ${TURNS} turns of ~0.9 MB, upstream and on disk`, async () => {
    directory = await mkdtemp(join(tmpdir(), 'modelgate-history-'))
    const storage = await openFileStorage({ directory })
    const { intern, chat, upstream } = await start({ storage })
    for (let turn = 1; turn <= TURNS; turn++) await chat(`${turn}:`.padEnd(TURN_BYTES, 'x'))

    expect(upstream.requests).toHaveLength(TURNS)
    const sizes = upstream.requests.map((request) => Buffer.byteLength(request.text))
    // Each turn sends at most the kept history plus the turn itself.
    for (const size of sizes) expect(size).toBeLessThanOrEqual(DEFAULT_HISTORY_LIMITS.maxBytes + TURN_BYTES + REQUEST_OVERHEAD)
    // The newest turns are the ones kept: the last request ends with turn 25, preceded by turn 24.
    const last = upstream.requests.at(-1)!.json.messages as Array<{ role: string; content: string }>
    const userTurns = last.filter((message) => message.role === 'user').map((message) => message.content.split(':')[0])
    expect(userTurns.slice(-2)).toEqual(['24', '25'])

    const stored = await storage.get<any>('intern_conversations', intern.id)
    expect(Buffer.byteLength(JSON.stringify(stored!.data.items))).toBeLessThanOrEqual(DEFAULT_HISTORY_LIMITS.maxBytes)

    // On disk: the journal is folded once it passes 16 MiB, and the snapshot holds one bounded conversation.
    const journal = (await stat(join(directory, 'journal.jsonl'))).size
    const snapshot = await stat(join(directory, 'snapshot.jsonl')).then((file) => file.size, () => 0)
    expect(journal).toBeLessThanOrEqual(16 * MIB + 2 * DEFAULT_HISTORY_LIMITS.maxBytes)
    expect(snapshot).toBeLessThanOrEqual(DEFAULT_HISTORY_LIMITS.maxBytes + MIB)
  }, 120_000)

  it('honours internHistory: maxItems keeps only the newest turns', async () => {
    const { intern, chat, upstream } = await start({ internHistory: { maxItems: 4 } })
    for (const text of ['one', 'two', 'three']) await chat(text)
    const stored = await harness!.gateway.storage.get<any>('intern_conversations', intern.id)
    expect(stored!.data.items.map((item: { role: string }) => item.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
    expect(stored!.data.items[0]!.content).toBe('two')
    // The third turn went upstream with the first two: the limit applies to what is kept after it.
    expect(upstream.requests.at(-1)!.json.messages.filter((message: { role: string }) => message.role === 'user')).toHaveLength(3)
  })

  it('refuses internHistory limits that are not positive integers (bytes: at least 1024)', () => {
    expect(() => createGateway({ internHistory: { maxItems: 0 } })).toThrow('options.internHistory.maxItems')
    expect(() => createGateway({ internHistory: { maxBytes: 100 } })).toThrow('options.internHistory.maxBytes')
    expect(() => createGateway({ internHistory: { maxBytes: 2048.5 } })).toThrow('options.internHistory.maxBytes')
  })
})
