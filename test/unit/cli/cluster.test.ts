import { availableParallelism } from 'node:os'
import { describe, expect, it } from 'vitest'
import { resolveConfig } from '../../../src/cli/config'
import {
  MAX_RESTART_DELAY_MS,
  MAX_RESTARTS_IN_A_ROW,
  RESTART_DELAY_MS,
  STABLE_AFTER_MS,
  assertStoreShared,
  planRestart,
  resolveWorkerCount,
  withWorkerField,
} from '../../../src/cli/cluster'
import { storeSharing } from '../../../src/cli/storage'
import type { LogFields, Logger } from '../../../src/core/logger'

describe('runner workers', () => {
  it('runs one process by default, as many as asked, or one per core with auto', () => {
    expect(resolveWorkerCount(undefined)).toBe(1)
    expect(resolveWorkerCount(4)).toBe(4)
    expect(resolveWorkerCount('auto')).toBe(availableParallelism())
  })

  it('knows which stores several processes may share', () => {
    expect(storeSharing('memory')).toMatchObject({ isShared: false, why: 'the memory store lives in the memory of one process' })
    expect(storeSharing('file')).toMatchObject({ isShared: false, why: expect.stringContaining('opened by one process at a time') })
    for (const url of ['postgres://postgres@127.0.0.1:5432/test', 'mysql://root@127.0.0.1:3306/test', 'redis://127.0.0.1:6379', 'rediss://127.0.0.1:6380']) {
      expect(storeSharing(url), url).toEqual({ isShared: true })
    }
  })

  it('refuses several workers on a store one process only may open, naming the setting as it was given', () => {
    const memory = resolveConfig({ storage: 'memory', workers: 2 })
    expect(() => assertStoreShared(memory, 2)).toThrow(
      'modelgate: MODELGATE_WORKERS=2 (--workers 2) needs a store several processes can share, and the memory store lives in the memory of one process: use the embedded SQLite store',
    )
    expect(() => assertStoreShared(resolveConfig({ storage: 'file', workers: 2 }), 2)).toThrow('the embedded file store is opened by one process at a time')
    // The default store: SQLite's write-ahead log lets the processes of one machine share its file.
    expect(() => assertStoreShared(resolveConfig({ workers: 2 }), 2)).not.toThrow()
    expect(() => assertStoreShared(resolveConfig({ storage: 'memory', workers: 'auto' }), 8)).toThrow('modelgate: MODELGATE_WORKERS=auto (8 cores) needs a store')
    // One worker is the single-process runner, on any store.
    expect(() => assertStoreShared(resolveConfig({ storage: 'memory', workers: 'auto' }), 1)).not.toThrow()
    expect(() => assertStoreShared(resolveConfig({ storage: 'postgres://postgres@127.0.0.1:5432/test', workers: 2 }), 2)).not.toThrow()
  })

  it('waits longer before each replacement in a row, up to a cap, and gives up after too many', () => {
    const delays: Array<number | null> = []
    let restarts = 0
    for (let death = 0; death <= MAX_RESTARTS_IN_A_ROW; death++) {
      const plan = planRestart(restarts, 1_000)
      restarts = plan.restartsInARow
      delays.push(plan.delayMs)
    }
    expect(delays.slice(0, 4)).toEqual([RESTART_DELAY_MS, RESTART_DELAY_MS * 2, RESTART_DELAY_MS * 4, RESTART_DELAY_MS * 8])
    expect(Math.max(...delays.filter((delay) => delay !== null))).toBe(MAX_RESTART_DELAY_MS)
    expect(delays.at(-1)).toBeNull()
    expect(delays.filter((delay) => delay === null)).toHaveLength(1)
    // A worker that served a minute ends the run: the next death starts over.
    expect(planRestart(MAX_RESTARTS_IN_A_ROW, STABLE_AFTER_MS)).toEqual({ restartsInARow: 1, delayMs: RESTART_DELAY_MS })
  })

  it("puts the worker's id on every log line", () => {
    const lines: Array<[string, LogFields | undefined]> = []
    const record = (message: string, fields?: LogFields) => void lines.push([message, fields])
    const logger: Logger = { debug: record, info: record, warn: record, error: record, isEnabled: (level) => level !== 'debug' }
    const worker = withWorkerField(logger, 2)
    worker.info('listening', { url: 'http://127.0.0.1:1' })
    worker.error('failed')
    expect(lines).toEqual([
      ['listening', { worker: 2, url: 'http://127.0.0.1:1' }],
      ['failed', { worker: 2 }],
    ])
    expect(worker.isEnabled?.('debug')).toBe(false)
  })
})
