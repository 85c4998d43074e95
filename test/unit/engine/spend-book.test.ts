/**
 * The spend book (src/engine/spend-book.ts) over the memory store: settlements retried until they land and
 * applied once however often they are sent, holds renewed while their process lives and released by another
 * process once their lease ran out, a hold whose answer was lost released, and the store's own error in the log.
 */

import { afterEach, describe, expect, it, vi } from 'vitest'
import { StorageUnavailableError } from '../../../src/core/errors'
import { createSpendBook, type SpendBook } from '../../../src/engine/spend-book'
import { createSpendRepository, spendCounter } from '../../../src/repositories/spend-counters'
import type { StorageDriver } from '../../../src/storage/contract'
import { memoryStorage } from '../../../src/storage/memory'
import { createRecordingLogger } from '../../helpers/logger'

const AT = new Date('2025-03-12T10:00:00Z')
const counter = (label: string) => spendCounter('key', `book-${label}`, 'usage', 'total', AT)

/** A store whose calls of one method fail, after doing their work or before, while `failures` lasts. */
const faultyStore = (store: StorageDriver) => {
  const faults = { settle: 0, hold: 0, isAfterWork: false }
  const cause = new Error('connect ECONNREFUSED 127.0.0.1:5432')
  const fail = () => {
    throw new StorageUnavailableError('Storage is unavailable', { cause })
  }
  const driver: StorageDriver = {
    ...store,
    async settle(settlements) {
      if (faults.settle > 0) {
        faults.settle--
        if (faults.isAfterWork) await store.settle(settlements)
        fail()
      }
      return store.settle(settlements)
    },
    async hold(hold) {
      if (faults.hold > 0) {
        faults.hold--
        if (faults.isAfterWork) await store.hold(hold)
        fail()
      }
      return store.hold(hold)
    },
  }
  return { driver, faults }
}

const books: SpendBook[] = []
const open = (store: StorageDriver, leaseMs = 60_000) => {
  const logging = createRecordingLogger()
  const book = createSpendBook({ repository: createSpendRepository(store), logger: logging.logger, leaseMs, closeGraceMs: 200 })
  books.push(book)
  return { book, logging, read: (label: string) => createSpendRepository(store).read([counter(label)]).then(([value]) => value) }
}

afterEach(async () => {
  vi.useRealTimers()
  await Promise.all(books.splice(0).map((book) => book.close()))
})

describe('the spend book', () => {
  it('holds, then settles the real cost in the step that gives the hold back', async () => {
    const { book, read } = open(memoryStorage())
    expect(await book.hold('r1', [{ counter: counter('a'), amount: 1_000 }])).toEqual([1_000])
    await book.settle('r1', [{ counter: counter('a'), amount: 300 }])
    expect(await read('a')).toBe(300)
  })

  it('retries a settlement the store refused until it lands, and logs the store’s own error', async () => {
    const { driver, faults } = faultyStore(memoryStorage())
    const { book, read, logging } = open(driver)
    await book.hold('r1', [{ counter: counter('a'), amount: 1_000 }])
    faults.settle = 3
    await book.settle('r1', [{ counter: counter('a'), amount: 300 }])
    expect(faults.settle).toBe(0)
    expect(await read('a')).toBe(300)
    const retries = logging.entries.filter((entry) => entry.message === 'spend settlement failed; retrying')
    expect(retries).toHaveLength(3)
    expect(logging.text()).toContain('ECONNREFUSED')
  })

  it('counts a settlement once when the store applied it but its answer was lost, however often it is sent again', async () => {
    const { driver, faults } = faultyStore(memoryStorage())
    const { book, read } = open(driver)
    await book.hold('r1', [{ counter: counter('a'), amount: 1_000 }])
    faults.settle = 2
    faults.isAfterWork = true
    await book.settle('r1', [{ counter: counter('a'), amount: 300 }])
    expect(await read('a')).toBe(300)
  })

  it('releases a hold whose answer was lost, so nothing stays held by a request that failed', async () => {
    const { driver, faults } = faultyStore(memoryStorage())
    const { book, read } = open(driver)
    faults.hold = 1
    faults.isAfterWork = true
    await expect(book.hold('r1', [{ counter: counter('a'), amount: 1_000 }])).rejects.toMatchObject({ status: 503 })
    await book.flush()
    expect(await read('a')).toBe(0)
    // The id is settled: a hold of it arriving late never lands.
    await expect(driver.hold({ id: 'r1', owner: 'late', leaseMs: 60_000, changes: [{ key: counter('a').key, amount: 1_000, ttlMs: 60_000 }] })).rejects.toMatchObject({ status: 409 })
  })

  it('renews the holds of a live process and lets another process release those of a dead one once their lease ran out', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] })
    let time = Date.parse('2025-03-12T10:00:00Z')
    const store = memoryStorage({ now: () => time })
    const live = open(store, 3_000)
    const dead = open(store, 3_000)
    await live.book.hold('live', [{ counter: counter('a'), amount: 100 }])
    await dead.book.hold('dead', [{ counter: counter('a'), amount: 1_000 }])
    // The dead process stops renewing (closed here without settling: its timers stop); the live one renews every second.
    await dead.book.close()
    time += 2_000
    await vi.advanceTimersByTimeAsync(1_000)
    time += 2_000
    // 4 s after both holds: the dead one's lease (3 s) ran out, the live one was renewed a second ago.
    expect(await live.book.releaseExpired()).toBe(1)
    expect(await live.read('a')).toBe(100)
    await live.book.settle('live', [{ counter: counter('a'), amount: 40 }])
    expect(await live.read('a')).toBe(40)
  })

  it('writes a settlement off with an error line naming its counters when the gateway closes before the store answers', async () => {
    const { driver, faults } = faultyStore(memoryStorage())
    const { book, logging } = open(driver)
    faults.settle = Number.POSITIVE_INFINITY
    void book.settle('r1', [{ counter: counter('a'), amount: 300 }])
    const closing = book.close()
    await closing
    const lost = logging.entries.find((entry) => entry.message.startsWith('spend settlements not written'))
    expect(lost?.level).toBe('error')
    expect(JSON.stringify(lost?.fields)).toContain('amountNano')
  })
})

describe("a request's settlement gate", () => {
  it('keeps what charges the request until the gate opens, lets releases and other requests through, and then sends at once', async () => {
    const store = memoryStorage()
    const { book, read } = open(store)
    await book.hold('held', [{ counter: counter('g'), amount: 500 }])
    const gate = book.gate('req_1')
    let isLanded = false
    const charged = book.settle('s1', [{ counter: counter('g'), amount: 70 }], 'req_1').then(() => (isLanded = true))
    // A release of the same request, and a settlement of another, do not wait.
    await book.settle('held', [], 'req_1')
    await book.settle('s2', [{ counter: counter('g'), amount: 5 }], 'req_2')
    expect(await read('g')).toBe(5)
    expect(isLanded).toBe(false)
    expect(gate.take()).toEqual([{ id: 's1', changes: [{ counter: counter('g'), amount: 70 }] }])
    await gate.open()
    await charged
    expect(await read('g')).toBe(75)
    // Open: the next one goes straight out.
    await book.settle('s3', [{ counter: counter('g'), amount: 1 }], 'req_1')
    expect(await read('g')).toBe(76)
    expect(gate.take()).toEqual([])
  })

  it('flush waits for settlements behind a gate, and a gate no record opens sends them after its bound, with a warning', async () => {
    vi.useFakeTimers()
    const { book, read, logging } = open(memoryStorage())
    book.gate('req_lost')
    void book.settle('s1', [{ counter: counter('h'), amount: 9 }], 'req_lost')
    const flushed = book.flush()
    await vi.advanceTimersByTimeAsync(30_000)
    await flushed
    expect(await read('h')).toBe(9)
    expect(logging.entries.find((entry) => entry.message.startsWith('spend settlements sent without their usage record'))?.level).toBe('warn')
  })

  it('sends what waits behind a shut gate when the book closes', async () => {
    const store = memoryStorage()
    const { book } = open(store)
    book.gate('req_closing')
    void book.settle('s1', [{ counter: counter('c'), amount: 11 }], 'req_closing')
    await book.close()
    expect(await createSpendRepository(store).read([counter('c')])).toEqual([11])
  })
})
