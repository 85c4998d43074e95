/**
 * The usage ledger through store failures: a write the store failed twice is answered with the error, and then sent in
 * the background until it lands, as the spend settlement of the same answer is (docs/decisions.md, Usage ledger), so a
 * key's usage and its ledger agree once the store is back. Closing waits a while for such writes, then names the
 * records it gives up on.
 */

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { StorageUnavailableError } from '../../../src/core/errors'
import { createLedger } from '../../../src/ledger/ledger'
import type { GenerationRecord, GenerationsRepository } from '../../../src/repositories/generations'
import { createRecordingLogger } from '../../helpers/logger'
import { generationRecord } from '../../storage/generations'

const SETTINGS = { retentionDays: 30, sweepIntervalMs: false as const }
const NOW = () => new Date('2026-03-14T12:00:00.000Z')

/** A repository whose `store` fails with `failure(call)` while it returns an error, and stores (once per id) after. */
const flakyRepository = (failure: (call: number) => Error | undefined) => {
  const stored = new Map<string, GenerationRecord>()
  let calls = 0
  const repository = {
    async store(records: GenerationRecord[]) {
      const error = failure(++calls)
      if (error) throw error
      for (const record of records) if (!stored.has(record.id)) stored.set(record.id, record)
    },
  } as unknown as GenerationsRepository
  return { repository, stored, calls: () => calls }
}

const unavailable = () => new StorageUnavailableError('Storage is unavailable')

describe('usage ledger writes through store failures', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })

  afterEach(() => {
    vi.useRealTimers()
  })

  it('rejects a write the store failed twice, then sends it until it lands, once', async () => {
    const flaky = flakyRepository((call) => (call <= 4 ? unavailable() : undefined))
    const recording = createRecordingLogger()
    const ledger = createLedger(flaky.repository, SETTINGS, NOW, recording.logger)
    const record = generationRecord('account-1', NOW().toISOString())

    await expect(ledger.write(record)).rejects.toMatchObject({ status: 503 })
    expect(flaky.calls()).toBe(2)
    expect(flaky.stored.size).toBe(0)

    // Two more failures in the background (200 ms, then 400 ms later), and the fifth call lands it.
    await vi.advanceTimersByTimeAsync(200)
    expect(flaky.calls()).toBe(3)
    await vi.advanceTimersByTimeAsync(400 + 800)
    expect(flaky.calls()).toBe(5)
    expect([...flaky.stored.keys()]).toEqual([record.id])
    expect(recording.entries.filter((entry) => entry.message === 'usage ledger records written after retries')).toHaveLength(1)

    // Nothing is left to send: closing does not wait.
    await ledger.close()
    expect(flaky.calls()).toBe(5)
  })

  it('close waits for writes still being retried, and names the records it gives up on', async () => {
    const flaky = flakyRepository(() => unavailable())
    const recording = createRecordingLogger()
    const ledger = createLedger(flaky.repository, SETTINGS, NOW, recording.logger, { closeGraceMs: 1_000 })
    const record = generationRecord('account-1', NOW().toISOString())
    await expect(ledger.write(record)).rejects.toMatchObject({ status: 503 })

    let isClosed = false
    const closing = ledger.close().then(() => (isClosed = true))
    await vi.advanceTimersByTimeAsync(999)
    expect(isClosed).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    await closing
    const givenUp = recording.entries.filter((entry) => entry.level === 'error')
    expect(givenUp.map((entry) => entry.message)).toEqual(['usage ledger records not written: the gateway closed before the store answered; their spend is counted'])
    expect(givenUp[0]!.fields).toMatchObject({ records: [{ id: record.id, requestId: record.requestId, cost: record.cost }] })
    // And it stops trying.
    const calls = flaky.calls()
    await vi.advanceTimersByTimeAsync(60_000)
    expect(flaky.calls()).toBe(calls)
  })

  it('does not send again a write the store refused for another reason than being unavailable', async () => {
    const flaky = flakyRepository(() => new TypeError('a bug'))
    const ledger = createLedger(flaky.repository, SETTINGS, NOW, createRecordingLogger().logger)
    await expect(ledger.write(generationRecord('account-1', NOW().toISOString()))).rejects.toThrow('a bug')
    await vi.advanceTimersByTimeAsync(60_000)
    expect(flaky.calls()).toBe(2)
    await ledger.close()
  })
})
