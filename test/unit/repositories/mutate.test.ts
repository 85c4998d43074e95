import { describe, expect, it } from 'vitest'
import { StorageConflictError, isGatewayError, renderError } from '../../../src/core/errors'
import { retryLostRaces, updateRecord, type ContentionPolicy } from '../../../src/repositories/mutate'
import { memoryStorage } from '../../../src/storage/memory'

/** A policy on a fake clock: every pause moves the clock by its length and is recorded. */
const fakePolicy = (overrides: Partial<ContentionPolicy> = {}) => {
  let time = 0
  const pauses: number[] = []
  const policy: ContentionPolicy = {
    deadlineMs: 1_000,
    baseDelayMs: 2,
    maxDelayMs: 100,
    clock: () => time,
    sleep: async (ms) => {
      pauses.push(ms)
      time += ms
    },
    random: () => 1,
    ...overrides,
  }
  return { policy, pauses, elapsed: () => time }
}

const losing = (times: number) => {
  let calls = 0
  return {
    attempt: async () => {
      calls++
      if (calls <= times) throw new StorageConflictError('version')
      return calls
    },
    calls: () => calls,
  }
}

describe('retryLostRaces', () => {
  it('retries lost compare-and-set races, far beyond a fixed attempt count, backing off up to a bound', async () => {
    const { policy, pauses } = fakePolicy({ deadlineMs: 60_000 })
    const writer = losing(20)
    expect(await retryLostRaces(writer.attempt, policy)).toBe(21)
    expect(writer.calls()).toBe(21)
    // Doubling from 2 ms, capped at 100 ms (the jitter source answers its maximum here).
    expect(pauses.slice(0, 8)).toEqual([2, 4, 8, 16, 32, 64, 100, 100])
    expect(Math.max(...pauses)).toBe(100)
  })

  it('spreads contenders with full jitter: each pause is a random share of its bound', async () => {
    const shares = [0.5, 0.25, 0]
    const { policy, pauses } = fakePolicy({ random: () => shares.shift() ?? 0 })
    await retryLostRaces(losing(3).attempt, policy)
    expect(pauses).toEqual([1, 1, 0])
  })

  it('gives up at the deadline with a 503 and Retry-After, never a 409 that blames the request', async () => {
    const { policy, elapsed } = fakePolicy()
    const error = await retryLostRaces(losing(Number.POSITIVE_INFINITY).attempt, policy).catch((thrown: unknown) => thrown)
    expect(isGatewayError(error)).toBe(true)
    expect(error).toMatchObject({ status: 503, message: 'The record is being changed by other requests; retry shortly' })
    expect(elapsed()).toBeGreaterThanOrEqual(1_000)
    expect(elapsed()).toBeLessThan(1_100)
    const response = renderError(error, 'standard')
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect(await response.json()).toEqual({ error: { code: 503, message: 'The record is being changed by other requests; retry shortly' } })
  })

  it('passes every other error straight through, without retrying', async () => {
    const { policy, pauses } = fakePolicy()
    let calls = 0
    const unique = new StorageConflictError('unique')
    await expect(
      retryLostRaces(async () => {
        calls++
        throw unique
      }, policy),
    ).rejects.toBe(unique)
    expect(calls).toBe(1)
    expect(pauses).toEqual([])
  })
})

describe('updateRecord', () => {
  it('applies 30 concurrent read-modify-writes of one record, each exactly once', async () => {
    const storage = memoryStorage()
    await storage.create('widgets', { id: 'w1', data: { writers: [] } })
    await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        updateRecord<{ writers: number[] }>(storage, 'widgets', 'w1', (current) => ({
          id: 'w1',
          data: { writers: [...current.data.writers, index] },
        })),
      ),
    )
    const stored = await storage.get<{ writers: number[] }>('widgets', 'w1')
    expect(stored?.version).toBe(31)
    expect([...stored!.data.writers].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, index) => index))
  })
})
