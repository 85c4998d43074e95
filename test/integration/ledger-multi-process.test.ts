/**
 * The usage ledger across processes: three gateway processes (the built runner) share one Redis, then one
 * PostgreSQL, and answer concurrent whole and streamed requests from a loopback OpenAI upstream. What callers
 * were told they spent equals what the ledger holds, record for record; and when one process is killed with
 * SIGKILL mid-load, every answer a client fully received still has its record, and none has two.
 * (Run after `npm run build`.)
 */

import { resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startListening, type RunningProcess } from '../helpers/process'
import { PROCESS_STORES, requireServer, uniqueNamespace } from '../helpers/stores'
import { fixture, startUpstream, type RecordedRequest, type Upstream, type UpstreamReply } from '../helpers/upstream'

const CLI = resolve(__dirname, '../../dist/cli.js')
const OPERATOR_KEY = `operator-${uniqueNamespace('key')}`
const MODEL = 'openai/gpt-4.1-mini'
/** Questions whose answers the upstream holds until a test lets them go (see `holdUpstream`). */
const LATE_QUESTION = 'late:'

/** What a client learned from one answer it read to the end. */
interface Received {
  id: string
  cost: number
}

/** The fixture answer, held after its first chunk until `release` (a slow model), so requests overlap. */
const heldReply = (request: RecordedRequest, release: Promise<void>): UpstreamReply => {
  const isStream = request.json?.stream === true
  const body = fixture('openai', isStream ? 'text.sse' : 'text.json')
  const cut = isStream ? body.indexOf('\n\n') + 2 : 40
  return {
    status: 200,
    headers: { 'content-type': isStream ? 'text/event-stream' : 'application/json' },
    chunks: [body.subarray(0, cut), body.subarray(cut)],
    pause: { after: 1, until: release },
  }
}

/** The `data:` objects of an SSE text. */
const sseObjects = (text: string): Array<Record<string, any>> =>
  text
    .split('\n\n')
    .map((block) => block.split('\n').find((line) => line.startsWith('data: {')))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice(6)))

describe.each(PROCESS_STORES)('usage ledger: three gateway processes on one $name', (store) => {
  const namespace = uniqueNamespace('ledger')
  let upstream: Upstream
  let gateways: RunningProcess[] = []
  let regularKey = ''
  let release: () => void = () => {}

  const start = () =>
    startListening('node', [CLI, 'serve'], {
      env: {
        ...store.env(namespace),
        MODELGATE_PORT: '0',
        MODELGATE_LOG_LEVEL: 'warn',
        MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
        MODELGATE_PROVIDER_OPENAI_BASE_URL: upstream.url,
        MODELGATE_PROVIDER_OPENAI_API_KEY: 'sk-ledger-test-0123456789abcdef',
      },
    })

  beforeAll(async () => {
    await requireServer(store.port)
    upstream = await startUpstream()
    const started = await Promise.allSettled([0, 1, 2].map(() => start()))
    gateways = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
    const failure = started.find((result) => result.status === 'rejected')
    if (failure) throw (failure as PromiseRejectedResult).reason
    const created = await fetch(`${gateways[0]!.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'caller' }),
    })
    expect(created.status).toBe(201)
    regularKey = ((await created.json()) as { key: string }).key
  })

  afterAll(async () => {
    release()
    await Promise.all(gateways.map((gateway) => gateway.stop('SIGKILL')))
    await upstream?.close()
    await store.drop(namespace)
  })

  /**
   * Holds every upstream answer until the returned function is called; answers to questions that start with
   * `LATE_QUESTION` wait for `late` as well, so they are still in flight whenever `late` settles.
   */
  const holdUpstream = (late: Promise<void> = Promise.resolve()) => {
    let open!: () => void
    const released = new Promise<void>((resolveRelease) => (open = resolveRelease))
    const lateReleased = Promise.all([released, late]).then(() => undefined)
    upstream.setHandler((request) => heldReply(request, String(request.json?.input).startsWith(LATE_QUESTION) ? lateReleased : released))
    release = open
    return open
  }

  /** Sends one request to `gateway`; resolves with what the client received, or null when the answer did not arrive whole. */
  const ask = async (gateway: RunningProcess, isStream: boolean, onReceived?: () => void, question = 'What is the capital of France?'): Promise<Received | null> => {
    try {
      const response = await fetch(`${gateway.url}/api/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${regularKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, input: question, stream: isStream }),
      })
      if (response.status !== 200) return null
      const text = await response.text()
      let received: Received | null = null
      if (isStream) {
        const completed = sseObjects(text).find((event) => event.type === 'response.completed')
        if (completed && text.trimEnd().endsWith('data: [DONE]')) received = { id: completed.response.id, cost: completed.response.usage.cost }
      } else {
        const body = JSON.parse(text)
        received = { id: body.id, cost: body.usage.cost }
      }
      if (received) onReceived?.()
      return received
    } catch {
      // The connection went down with its process: this answer did not arrive.
      return null
    }
  }

  const get = (index: number, path: string, key: string) =>
    fetch(`${gateways[index % gateways.length]!.url}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } })

  /** The ledger's view of each received answer, read through the gateways still running. */
  const recordedCosts = async (received: Received[], live: number[]) =>
    Promise.all(
      received.map(async ({ id }, index) => {
        const response = await get(live[index % live.length]!, `/generation?id=${id}`, regularKey)
        expect(response.status, `no record of ${id}`).toBe(200)
        return ((await response.json()) as { data: { total_cost: number } }).data.total_cost
      }),
    )

  const activity = async (index: number) => {
    const response = await get(index, `/activity?date=${new Date().toISOString().slice(0, 10)}`, OPERATOR_KEY)
    expect(response.status).toBe(200)
    const { data } = (await response.json()) as { data: Array<{ requests: number; usage: number }> }
    return { requests: data.reduce((sum, row) => sum + row.requests, 0), usage: data.reduce((sum, row) => sum + row.usage, 0) }
  }

  it('records every answer exactly once: the costs callers were told add up to the costs recorded', async () => {
    const open = holdUpstream()
    const total = 36
    const answers = Array.from({ length: total }, (_, index) => ask(gateways[index % 3]!, index % 2 === 0))
    await vi.waitFor(() => expect(upstream.requests.length).toBeGreaterThanOrEqual(total), { timeout: 20_000 })
    open()
    const received = (await Promise.all(answers)).filter((answer): answer is Received => answer !== null)
    expect(received).toHaveLength(total)
    expect(new Set(received.map((answer) => answer.id)).size).toBe(total)
    const recorded = await recordedCosts(received, [0, 1, 2])
    expect(recorded).toEqual(received.map((answer) => answer.cost))
    const told = received.reduce((sum, answer) => sum + answer.cost, 0)
    const summed = await activity(1)
    expect(summed.requests).toBe(total)
    expect(summed.usage).toBeCloseTo(told, 9)
  })

  it('after a SIGKILL of one process mid-load, every answer a client fully received has its record, and none two', async () => {
    const before = await activity(0)
    let killed!: () => void
    const afterKill = new Promise<void>((resolveKill) => (killed = resolveKill))
    const open = holdUpstream(afterKill)
    const victim = gateways[2]!
    const total = 45
    let isKilled = false
    const kill = () => {
      if (isKilled) return
      isKilled = true
      victim.child.kill('SIGKILL')
      killed()
    }
    const requestsBefore = upstream.requests.length
    // The victim dies as soon as its first answer reached its client; its other answers are held upstream until
    // then, so they are mid-flight when it dies.
    const answers = Array.from({ length: total }, (_, index) =>
      index % 3 === 2 ? ask(victim, index % 2 === 0, kill, index === 2 ? undefined : `${LATE_QUESTION} ${index}`) : ask(gateways[index % 3]!, index % 2 === 0),
    )
    await vi.waitFor(() => expect(upstream.requests.length - requestsBefore).toBeGreaterThanOrEqual(total), { timeout: 20_000 })
    open()
    const outcomes = await Promise.all(answers)
    expect(isKilled).toBe(true)
    // Killed mid-load: answers it was still sending never arrived whole.
    expect(outcomes.filter((answer, index) => index % 3 === 2 && answer === null).length).toBeGreaterThan(0)
    const survivors = [0, 1]
    gateways = gateways.filter((gateway) => gateway !== victim)
    const received = outcomes.filter((answer): answer is Received => answer !== null)
    // The survivors answered all of theirs whole.
    expect(outcomes.filter((answer, index) => index % 3 !== 2 && answer === null)).toHaveLength(0)
    const recorded = await recordedCosts(received, survivors.map((_, index) => index))
    expect(recorded).toEqual(received.map((answer) => answer.cost))
    const after = await activity(0)
    const newRecords = after.requests - before.requests
    // Every received answer is recorded once; the victim may have recorded a few its clients never got whole.
    expect(newRecords).toBeGreaterThanOrEqual(received.length)
    expect(newRecords).toBeLessThanOrEqual(total)
    expect(after.usage - before.usage).toBeGreaterThanOrEqual(received.reduce((sum, answer) => sum + answer.cost, 0) - 1e-9)
  })
})
