/**
 * The one suite every storage driver runs (memory, file, Redis, PostgreSQL, MariaDB). Each test
 * gets a fresh driver and also uses its own collection names and counter keys, so drivers on a
 * shared server need no cleanup between tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { isGatewayError, type StorageConflictKind } from '../../src/core/errors'
import type { CounterChange, JsonObject, ListQuery, RecordInput, StorageDriver, StoredRecord } from '../../src/storage/contract'
import { describeConcurrentUpdates } from './concurrent-updates'
import { describeSpendLimits } from './spend-limits'
import { describeTallies } from './tallies'

export interface StorageContractOptions {
  /** The driver's clock in Unix milliseconds (default `Date.now`). */
  now?: () => number
  /** Moves the driver's clock forward; when given, expiry tests use it instead of waiting for real time. */
  advanceTime?: (ms: number) => void
  /** How far the driver's clock may be from `now` (a server clock), in milliseconds (default 0). */
  clockToleranceMs?: number
}

/** Longest real-time wait of the expiry tests, beyond the TTL itself. */
const MAX_CLOCK_WAIT_MS = 2_000

const settle = async <T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown }> => {
  try {
    return { value: await promise }
  } catch (error) {
    return { error }
  }
}

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  const outcome = await settle(promise)
  if ('value' in outcome) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`)
  return outcome.error
}

const isConflict = (error: unknown, kind: StorageConflictKind): boolean =>
  isGatewayError(error) && error.status === 409 && (error as { kind?: unknown }).kind === kind

const expectConflict = async (promise: Promise<unknown>, kind: StorageConflictKind): Promise<void> => {
  const error = await rejectionOf(promise)
  expect(isGatewayError(error), `expected a GatewayError, got ${String(error)}`).toBe(true)
  expect(error).toMatchObject({ status: 409, kind })
}

const randomSuffix = () => Math.random().toString(36).slice(2, 10)

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32). */
const seededRandom = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

/** Registers the shared storage contract tests for one driver. */
export function describeStorageContract(
  name: string,
  makeDriver: () => Promise<StorageDriver> | StorageDriver,
  options: StorageContractOptions = {},
): void {
  const now = options.now ?? Date.now
  const tolerance = options.clockToleranceMs ?? 0

  /** Lets the driver's clock pass `instant`, by the fake clock or a bounded poll (never a fixed sleep). */
  const waitUntilPast = async (instant: number): Promise<void> => {
    if (options.advanceTime) {
      const remaining = instant + tolerance + 1 - now()
      if (remaining > 0) options.advanceTime(remaining)
      return
    }
    const deadline = Date.now() + Math.max(0, instant - now()) + tolerance + MAX_CLOCK_WAIT_MS
    while (now() <= instant + tolerance) {
      if (Date.now() > deadline) throw new Error(`clock did not pass ${instant} within the wait bound`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }

  describe(`storage contract: ${name}`, () => {
    let driver: StorageDriver
    let widgets: string
    let gadgets: string
    let counterKey: (label: string) => string

    beforeEach(async () => {
      const suffix = randomSuffix()
      widgets = `widgets-${suffix}`
      gadgets = `gadgets-${suffix}`
      counterKey = (label) => `counter-${suffix}-${label}`
      driver = await makeDriver()
    })

    afterEach(async () => {
      await driver.close()
    })

    const widget = (id: string, extra: Partial<RecordInput> = {}): RecordInput => ({
      id,
      data: { name: `widget ${id}` },
      ...extra,
    })

    describe('createMany', () => {
      it('stores every fresh record in input order, listable and indexed', async () => {
        const created = await driver.createMany(widgets, [
          widget('b', { indexes: { day: 'd1' }, sortKey: '2' }),
          widget('a', { indexes: { day: 'd1' }, sortKey: '1', uniques: ['slug:a'] }),
          widget('c', { indexes: { day: 'd2' }, sortKey: '3' }),
        ])
        expect(created.map((record) => record?.id)).toEqual(['b', 'a', 'c'])
        expect(created[1]).toEqual({ id: 'a', data: { name: 'widget a' }, version: 1, indexes: { day: 'd1' }, uniques: ['slug:a'], sortKey: '1' })
        expect(await driver.get(widgets, 'b')).toEqual(created[0])
        expect((await driver.findByUnique(widgets, 'slug:a'))?.id).toBe('a')
        const day = await driver.list(widgets, { where: { day: 'd1' } })
        expect(day.items.map((record) => record.id)).toEqual(['a', 'b'])
        expect(day.totalCount).toBe(2)
      })

      it('answers null for a taken id or unique key, and still stores the others', async () => {
        await driver.create(widgets, widget('taken', { data: { name: 'first' }, uniques: ['slug:held'] }))
        const created = await driver.createMany(widgets, [
          widget('taken', { data: { name: 'second' } }),
          widget('fresh'),
          widget('claims-held', { uniques: ['slug:held'] }),
          widget('late'),
        ])
        expect(created.map((record) => record?.id ?? null)).toEqual([null, 'fresh', null, 'late'])
        expect((await driver.get(widgets, 'taken'))?.data).toEqual({ name: 'first' })
        expect(await driver.get(widgets, 'claims-held')).toBeNull()
        expect((await driver.list(widgets)).totalCount).toBe(3)
      })

      it('lets the first of two inputs with one id or one unique key win', async () => {
        const created = await driver.createMany(widgets, [
          widget('twin', { data: { name: 'one' } }),
          widget('twin', { data: { name: 'two' } }),
          widget('u1', { uniques: ['slug:shared'] }),
          widget('u2', { uniques: ['slug:shared'] }),
        ])
        expect(created.map((record) => record?.id ?? null)).toEqual(['twin', null, 'u1', null])
        expect((await driver.get(widgets, 'twin'))?.data).toEqual({ name: 'one' })
        expect((await driver.findByUnique(widgets, 'slug:shared'))?.id).toBe('u1')
      })

      it('is a no-op when the same batch is sent again', async () => {
        const batch = [widget('r1', { indexes: { day: 'd' } }), widget('r2', { indexes: { day: 'd' } })]
        await driver.createMany(widgets, batch)
        expect(await driver.createMany(widgets, batch)).toEqual([null, null])
        expect((await driver.list(widgets, { where: { day: 'd' } })).totalCount).toBe(2)
      })

      it('answers an empty batch with an empty array', async () => {
        expect(await driver.createMany(widgets, [])).toEqual([])
      })

      it('refuses an invalid input before storing any', async () => {
        await expect(driver.createMany(widgets, [widget('ok'), { id: '', data: {} }])).rejects.toThrow(TypeError)
        expect(await driver.get(widgets, 'ok')).toBeNull()
      })

      it('creates each record exactly once when batches race', async () => {
        const ids = Array.from({ length: 12 }, (_, index) => `race-${index}`)
        const batches = Array.from({ length: 6 }, (_, round) =>
          driver.createMany(widgets, ids.map((id) => widget(id, { data: { round }, indexes: { kind: 'race' } }))),
        )
        const outcomes = await Promise.all(batches)
        for (const [index] of ids.entries()) {
          expect(outcomes.filter((outcome) => outcome[index] !== null)).toHaveLength(1)
        }
        expect((await driver.list(widgets, { where: { kind: 'race' } })).totalCount).toBe(ids.length)
      })
    })

    describe('create and get', () => {
      it('round-trips a record with version 1', async () => {
        const input: RecordInput = {
          id: 'w1',
          data: { name: 'Widget', nested: { list: [1, 'two', null, true, { deep: 'ünïcödé ✓' }] }, price: 12.5 },
          indexes: { accountId: 'acc1', color: 'red' },
          uniques: ['slug:acc1:widget', 'code:W1'],
          sortKey: '2024-01-01',
        }
        const created = await driver.create(widgets, input)
        const expected: StoredRecord = {
          id: 'w1',
          data: input.data,
          version: 1,
          indexes: { accountId: 'acc1', color: 'red' },
          uniques: ['slug:acc1:widget', 'code:W1'],
          sortKey: '2024-01-01',
        }
        expect(created).toEqual(expected)
        expect(await driver.get(widgets, 'w1')).toEqual(expected)
      })

      it('fills defaults for indexes, uniques and sortKey', async () => {
        const created = await driver.create(widgets, { id: 'w1', data: {} })
        expect(created).toEqual({ id: 'w1', data: {}, version: 1, indexes: {}, uniques: [], sortKey: '' })
        expect(await driver.get(widgets, 'w1')).toEqual(created)
      })

      it('stores data as JSON does, dropping undefined properties', async () => {
        const data = { kept: 1, dropped: undefined } as unknown as JsonObject
        await driver.create(widgets, { id: 'w1', data })
        const stored = await driver.get(widgets, 'w1')
        expect(stored?.data).toEqual({ kept: 1 })
        expect(Object.keys(stored?.data ?? {})).toEqual(['kept'])
      })

      it('stores handed-over data as it stores any data, in its JSON form', async () => {
        const plain = { name: 'plain', tags: ['a', 'b'], nested: { count: 2, none: null, flag: false } }
        const notJson = [
          { kept: 1, dropped: undefined },
          { when: new Date(Date.UTC(2025, 0, 2)), nan: Number.NaN, zero: -0 },
          { list: [1, undefined, () => 1] },
        ] as unknown as JsonObject[]
        const inputs = [plain, ...notJson].map((data, index) => ({ id: `h${index}`, data: data as JsonObject, isDataHandedOver: true }))
        const [created] = await driver.createMany(widgets, [inputs[0]!])
        for (const input of inputs.slice(1)) await driver.create(widgets, input)
        expect(created?.data).toEqual(plain)
        const stored = await Promise.all(inputs.map((input) => driver.get(widgets, input.id)))
        expect(stored.map((record) => record?.data)).toEqual([
          { name: 'plain', tags: ['a', 'b'], nested: { count: 2, none: null, flag: false } },
          { kept: 1 },
          { when: '2025-01-02T00:00:00.000Z', nan: null, zero: 0 },
          { list: [1, null, null] },
        ])
        expect(Object.is((stored[2]?.data as { zero: number }).zero, 0)).toBe(true)
      })

      it('returns null for an absent record', async () => {
        await driver.create(widgets, widget('w1'))
        expect(await driver.get(widgets, 'missing')).toBeNull()
        expect(await driver.get(gadgets, 'w1')).toBeNull()
      })

      it('keeps collections apart: the same id may exist in two', async () => {
        await driver.create(widgets, { id: 'x', data: { kind: 'widget' } })
        await driver.create(gadgets, { id: 'x', data: { kind: 'gadget' } })
        expect((await driver.get(widgets, 'x'))?.data).toEqual({ kind: 'widget' })
        expect((await driver.get(gadgets, 'x'))?.data).toEqual({ kind: 'gadget' })
      })

      // Drivers may hand out fresh copies (Redis, SQL) or frozen shared records (memory, file), whose mutation throws.
      const mutateIfAllowed = (mutate: () => void) => {
        try {
          mutate()
        } catch (error) {
          expect(error).toBeInstanceOf(TypeError)
        }
      }

      it('keeps stored state apart: mutating inputs or results never changes it', async () => {
        const input = {
          id: 'w1',
          data: { name: 'original', tags: ['a'] },
          indexes: { color: 'red' },
          uniques: ['slug:one'],
        }
        const created = await driver.create(widgets, input)
        input.data.name = 'mutated input'
        input.data.tags.push('b')
        input.indexes.color = 'blue'
        input.uniques.push('slug:two')
        mutateIfAllowed(() => {
          created.data.name = 'mutated result'
        })
        mutateIfAllowed(() => created.uniques.push('slug:three'))

        const fetched = await driver.get<{ name: string; tags: string[] }>(widgets, 'w1')
        expect(fetched?.data).toEqual({ name: 'original', tags: ['a'] })
        mutateIfAllowed(() => fetched!.data.tags.push('c'))
        mutateIfAllowed(() => {
          fetched!.indexes.color = 'green'
        })
        const listed = await driver.list(widgets)
        mutateIfAllowed(() => {
          listed.items[0]!.data.name = 'mutated list item'
        })
        const found = await driver.findByUnique(widgets, 'slug:one')
        mutateIfAllowed(() => {
          found!.data.name = 'mutated found'
        })

        expect(await driver.get(widgets, 'w1')).toEqual({
          id: 'w1',
          data: { name: 'original', tags: ['a'] },
          version: 1,
          indexes: { color: 'red' },
          uniques: ['slug:one'],
          sortKey: '',
        })
        expect(await driver.findByUnique(widgets, 'slug:two')).toBeNull()
        expect(await driver.list(widgets, { where: { color: 'blue' } })).toEqual({ items: [], totalCount: 0 })
      })

      it('refuses a duplicate id with a unique conflict and keeps the original', async () => {
        const original = await driver.create(widgets, widget('w1'))
        await expectConflict(driver.create(widgets, { id: 'w1', data: { name: 'other' } }), 'unique')
        expect(await driver.get(widgets, 'w1')).toEqual(original)
      })

      it('refuses a unique key held by another record, creating nothing', async () => {
        await driver.create(widgets, widget('w1', { uniques: ['slug:shared'] }))
        await expectConflict(driver.create(widgets, widget('w2', { uniques: ['slug:free', 'slug:shared'] })), 'unique')
        expect(await driver.get(widgets, 'w2')).toBeNull()
        expect(await driver.findByUnique(widgets, 'slug:free')).toBeNull()
        expect((await driver.list(widgets)).totalCount).toBe(1)
        // The refused create claimed nothing: its other key is still free.
        await driver.create(widgets, widget('w3', { uniques: ['slug:free'] }))
      })

      it('scopes unique keys to their collection', async () => {
        await driver.create(widgets, widget('w1', { uniques: ['slug:same'] }))
        await driver.create(gadgets, widget('g1', { uniques: ['slug:same'] }))
        expect((await driver.findByUnique(widgets, 'slug:same'))?.id).toBe('w1')
        expect((await driver.findByUnique(gadgets, 'slug:same'))?.id).toBe('g1')
      })

      it('keeps ids and unique keys in separate namespaces', async () => {
        await driver.create(widgets, widget('same'))
        await driver.create(widgets, widget('other', { uniques: ['same'] }))
        expect((await driver.findByUnique(widgets, 'same'))?.id).toBe('other')
      })
    })

    describe('findByUnique', () => {
      it('finds the record holding each of its keys', async () => {
        const created = await driver.create(widgets, widget('w1', { uniques: ['slug:a', 'code:b'] }))
        expect(await driver.findByUnique(widgets, 'slug:a')).toEqual(created)
        expect(await driver.findByUnique(widgets, 'code:b')).toEqual(created)
      })

      it('returns null when no record holds the key', async () => {
        await driver.create(widgets, widget('w1', { uniques: ['slug:a'] }))
        expect(await driver.findByUnique(widgets, 'slug:b')).toBeNull()
        expect(await driver.findByUnique(gadgets, 'slug:a')).toBeNull()
      })
    })

    describe('update', () => {
      it('replaces the record and bumps its version', async () => {
        await driver.create(widgets, widget('w1', { indexes: { color: 'red' }, uniques: ['slug:a'], sortKey: 'b' }))
        const updated = await driver.update(widgets, 'w1', 1, {
          id: 'w1',
          data: { name: 'renamed' },
          indexes: { color: 'blue' },
          uniques: ['slug:a'],
          sortKey: 'c',
        })
        const expected = {
          id: 'w1',
          data: { name: 'renamed' },
          version: 2,
          indexes: { color: 'blue' },
          uniques: ['slug:a'],
          sortKey: 'c',
        }
        expect(updated).toEqual(expected)
        expect(await driver.get(widgets, 'w1')).toEqual(expected)
        const third = await driver.update(widgets, 'w1', 2, { id: 'w1', data: { name: 'third' } })
        expect(third?.version).toBe(3)
      })

      it('resets omitted indexes, uniques and sortKey to their defaults', async () => {
        await driver.create(widgets, widget('w1', { indexes: { color: 'red' }, uniques: ['slug:a'], sortKey: 'k' }))
        const updated = await driver.update(widgets, 'w1', 1, { id: 'w1', data: {} })
        expect(updated).toEqual({ id: 'w1', data: {}, version: 2, indexes: {}, uniques: [], sortKey: '' })
        expect(await driver.findByUnique(widgets, 'slug:a')).toBeNull()
        expect((await driver.list(widgets, { where: { color: 'red' } })).totalCount).toBe(0)
      })

      it('refuses a stale version and leaves the record unchanged', async () => {
        await driver.create(widgets, widget('w1'))
        const current = await driver.update(widgets, 'w1', 1, { id: 'w1', data: { name: 'v2' } })
        await expectConflict(driver.update(widgets, 'w1', 1, { id: 'w1', data: { name: 'lost' } }), 'version')
        await expectConflict(driver.update(widgets, 'w1', 7, { id: 'w1', data: { name: 'future' } }), 'version')
        expect(await driver.get(widgets, 'w1')).toEqual(current)
      })

      it('returns null for a missing record and creates nothing', async () => {
        expect(await driver.update(widgets, 'missing', 1, { id: 'missing', data: {} })).toBeNull()
        expect(await driver.get(widgets, 'missing')).toBeNull()
      })

      it('frees the old unique key and claims the new one', async () => {
        await driver.create(widgets, widget('w1', { uniques: ['slug:old', 'code:kept'] }))
        await driver.update(widgets, 'w1', 1, widget('w1', { uniques: ['slug:new', 'code:kept'] }))
        expect(await driver.findByUnique(widgets, 'slug:old')).toBeNull()
        expect((await driver.findByUnique(widgets, 'slug:new'))?.id).toBe('w1')
        expect((await driver.findByUnique(widgets, 'code:kept'))?.id).toBe('w1')
        await driver.create(widgets, widget('w2', { uniques: ['slug:old'] }))
        await expectConflict(driver.create(widgets, widget('w3', { uniques: ['slug:new'] })), 'unique')
      })

      it('refuses a unique key held by another record and changes nothing', async () => {
        await driver.create(widgets, widget('w1', { uniques: ['slug:one'] }))
        const before = await driver.create(widgets, widget('w2', { uniques: ['slug:two'] }))
        await expectConflict(
          driver.update(
            widgets,
            'w2',
            1,
            widget('w2', { data: { name: 'changed' }, uniques: ['slug:three', 'slug:one'] }),
          ),
          'unique',
        )
        expect(await driver.get(widgets, 'w2')).toEqual(before)
        expect((await driver.findByUnique(widgets, 'slug:one'))?.id).toBe('w1')
        expect((await driver.findByUnique(widgets, 'slug:two'))?.id).toBe('w2')
        expect(await driver.findByUnique(widgets, 'slug:three')).toBeNull()
        // The version did not move, so the owner can still update with it.
        expect((await driver.update(widgets, 'w2', 1, widget('w2')))?.version).toBe(2)
      })

      it('rejects an input whose id differs from the id being updated', async () => {
        await driver.create(widgets, widget('w1'))
        expect(await rejectionOf(driver.update(widgets, 'w1', 1, widget('w2')))).toBeInstanceOf(TypeError)
        expect((await driver.get(widgets, 'w1'))?.version).toBe(1)
      })
    })

    describe('delete', () => {
      it('removes a record and reports whether there was one', async () => {
        await driver.create(widgets, widget('w1'))
        expect(await driver.delete(widgets, 'w1')).toBe(true)
        expect(await driver.get(widgets, 'w1')).toBeNull()
        expect(await driver.delete(widgets, 'w1')).toBe(false)
        expect(await driver.delete(widgets, 'never-existed')).toBe(false)
        expect(await driver.delete(widgets, 'never-existed', 1)).toBe(false)
      })

      it('frees the unique keys of the deleted record', async () => {
        await driver.create(widgets, widget('w1', { uniques: ['slug:a', 'slug:b'] }))
        await driver.delete(widgets, 'w1')
        expect(await driver.findByUnique(widgets, 'slug:a')).toBeNull()
        await driver.create(widgets, widget('w2', { uniques: ['slug:a', 'slug:b'] }))
        expect((await driver.findByUnique(widgets, 'slug:b'))?.id).toBe('w2')
      })

      it('deletes with a matching expectedVersion', async () => {
        await driver.create(widgets, widget('w1'))
        await driver.update(widgets, 'w1', 1, widget('w1'))
        expect(await driver.delete(widgets, 'w1', 2)).toBe(true)
        expect(await driver.get(widgets, 'w1')).toBeNull()
      })

      it('refuses a stale expectedVersion and keeps the record', async () => {
        await driver.create(widgets, widget('w1', { uniques: ['slug:a'] }))
        const current = await driver.update(widgets, 'w1', 1, widget('w1', { uniques: ['slug:a'] }))
        await expectConflict(driver.delete(widgets, 'w1', 1), 'version')
        expect(await driver.get(widgets, 'w1')).toEqual(current)
        expect((await driver.findByUnique(widgets, 'slug:a'))?.id).toBe('w1')
      })

      it('lets the id be created again, starting over at version 1', async () => {
        await driver.create(widgets, widget('w1'))
        await driver.update(widgets, 'w1', 1, widget('w1'))
        await driver.delete(widgets, 'w1')
        expect((await driver.create(widgets, widget('w1')))?.version).toBe(1)
      })
    })

    describe('list', () => {
      const seed = async () => {
        // Inserted out of order; code-unit order puts 'B' before 'a' and 'a10' before 'a2'.
        const rows: Array<[string, string, string, string]> = [
          ['a2', 'a', 'red', 's'],
          ['b1', 'B', 'blue', 'm'],
          ['a10', 'a', 'red', 'm'],
          ['c1', '', 'red', 's'],
          ['d1', 'ä', 'blue', 's'],
          ['e1', 'a', 'blue', 's'],
        ]
        for (const [id, sortKey, color, size] of rows) {
          await driver.create(widgets, widget(id, { sortKey, indexes: { color, size } }))
        }
      }
      const ids = (items: StoredRecord[]) => items.map((item) => item.id)
      const ORDER = ['c1', 'b1', 'a10', 'a2', 'e1', 'd1']

      it('returns nothing for an empty or unknown collection', async () => {
        expect(await driver.list(widgets)).toEqual({ items: [], totalCount: 0 })
        expect(await driver.list(widgets, { where: { color: 'red' }, offset: 3, limit: 2 })).toEqual({
          items: [],
          totalCount: 0,
        })
      })

      it('orders by sortKey, then id, in code-unit order', async () => {
        await seed()
        const result = await driver.list(widgets)
        expect(ids(result.items)).toEqual(ORDER)
        expect(result.totalCount).toBe(6)
        expect(result.items[0]).toEqual(await driver.get(widgets, 'c1'))
      })

      it('filters on one index and on two', async () => {
        await seed()
        const red = await driver.list(widgets, { where: { color: 'red' } })
        expect(ids(red.items)).toEqual(['c1', 'a10', 'a2'])
        expect(red.totalCount).toBe(3)
        const blueSmall = await driver.list(widgets, { where: { color: 'blue', size: 's' } })
        expect(ids(blueSmall.items)).toEqual(['e1', 'd1'])
        expect(blueSmall.totalCount).toBe(2)
        expect(await driver.list(widgets, { where: { color: 'green' } })).toEqual({ items: [], totalCount: 0 })
        expect(await driver.list(widgets, { where: { undeclared: 'red' } })).toEqual({ items: [], totalCount: 0 })
      })

      it('pages with offset and limit, counting all matches', async () => {
        await seed()
        const pages: string[] = []
        for (let offset = 0; offset < 6; offset += 4) {
          const page = await driver.list(widgets, { offset, limit: 4 })
          expect(page.totalCount).toBe(6)
          pages.push(...ids(page.items))
        }
        expect(pages).toEqual(ORDER)
        expect(ids((await driver.list(widgets, { offset: 2, limit: 2 })).items)).toEqual(['a10', 'a2'])
        expect(ids((await driver.list(widgets, { offset: 4 })).items)).toEqual(['e1', 'd1'])
        expect(ids((await driver.list(widgets, { limit: 1, where: { color: 'blue' } })).items)).toEqual(['b1'])
        expect(await driver.list(widgets, { limit: 0 })).toEqual({ items: [], totalCount: 6 })
      })

      it('returns no items for an offset past the end, still counting matches', async () => {
        await seed()
        expect(await driver.list(widgets, { offset: 6 })).toEqual({ items: [], totalCount: 6 })
        expect(await driver.list(widgets, { offset: 100, limit: 10, where: { color: 'red' } })).toEqual({
          items: [],
          totalCount: 3,
        })
      })

      it('lists only its own collection', async () => {
        await seed()
        await driver.create(gadgets, widget('g1', { indexes: { color: 'red' } }))
        expect(ids((await driver.list(gadgets)).items)).toEqual(['g1'])
        expect((await driver.list(widgets, { where: { color: 'red' } })).totalCount).toBe(3)
      })

      it('follows updates and deletes', async () => {
        await seed()
        await driver.update(widgets, 'c1', 1, widget('c1', { sortKey: 'z', indexes: { color: 'blue', size: 's' } }))
        await driver.delete(widgets, 'a2')
        expect(ids((await driver.list(widgets)).items)).toEqual(['b1', 'a10', 'e1', 'c1', 'd1'])
        expect(ids((await driver.list(widgets, { where: { color: 'red' } })).items)).toEqual(['a10'])
      })

      it('keeps order and filters through writes out of order, moves, index changes, rewrites and deletes', async () => {
        type Row = { sortKey: string; color: string; size: string; version: number }
        const model = new Map<string, Row>()
        const put = async (id: string, row: Omit<Row, 'version'>) => {
          const current = model.get(id)
          const input = widget(id, { sortKey: row.sortKey, indexes: { color: row.color, size: row.size } })
          if (current) await driver.update(widgets, id, current.version, input)
          else await driver.create(widgets, input)
          model.set(id, { ...row, version: (current?.version ?? 0) + 1 })
        }
        // 24 records whose sort keys arrive as a permutation, not in order.
        for (let index = 0; index < 24; index++) {
          await put(`r${index}`, { sortKey: String((index * 7) % 24).padStart(2, '0'), color: index % 3 === 0 ? 'red' : 'blue', size: index % 2 ? 'm' : 's' })
        }
        await put('r5', { ...model.get('r5')!, sortKey: '99' }) // moved to the end
        await put('r6', { ...model.get('r6')!, sortKey: '00' }) // moved to a tie at the front, broken by id
        await put('r7', { ...model.get('r7')!, color: 'red' }) // another index value, same place
        await put('r8', { ...model.get('r8')! }) // rewritten where it was
        for (const id of ['r0', 'r12', 'r23']) {
          await driver.delete(widgets, id)
          model.delete(id)
        }
        const expected = (where: Partial<Row> = {}) =>
          [...model]
            .filter(([, row]) => Object.entries(where).every(([field, value]) => row[field as keyof Row] === value))
            .sort(([idA, a], [idB, b]) => (a.sortKey !== b.sortKey ? (a.sortKey < b.sortKey ? -1 : 1) : idA < idB ? -1 : 1))
            .map(([id]) => id)
        const pages = async (where?: Record<string, string>) => {
          const seen: string[] = []
          for (let offset = 0; ; offset += 5) {
            const page = await driver.list(widgets, { where, offset, limit: 5 })
            expect(page.totalCount).toBe(expected(where).length)
            seen.push(...ids(page.items))
            if (page.items.length < 5) return seen
          }
        }
        expect(await pages()).toEqual(expected())
        expect(await pages({ color: 'red' })).toEqual(expected({ color: 'red' }))
        expect(await pages({ color: 'blue', size: 'm' })).toEqual(expected({ color: 'blue', size: 'm' }))
        expect(expected({ color: 'red' })).toContain('r7')
      })
    })

    describe('increment', () => {
      it('accumulates and reports when the counter resets', async () => {
        const before = now()
        const first = await driver.increment(counterKey('a'), 1, 60_000)
        const after = now()
        expect(first.value).toBe(1)
        expect(first.expiresAt).toBeGreaterThanOrEqual(before + 60_000 - tolerance)
        expect(first.expiresAt).toBeLessThanOrEqual(after + 60_000 + tolerance)
        const second = await driver.increment(counterKey('a'), 2, 60_000)
        expect(second.value).toBe(3)
        expect((await driver.increment(counterKey('a'), -1, 60_000)).value).toBe(2)
      })

      it('keeps counters apart', async () => {
        await driver.increment(counterKey('a'), 5, 60_000)
        expect((await driver.increment(counterKey('b'), 1, 60_000)).value).toBe(1)
      })

      it('does not extend the expiry on later increments', async () => {
        const first = await driver.increment(counterKey('a'), 1, 60_000)
        await waitUntilPast(now() + 2)
        const second = await driver.increment(counterKey('a'), 1, 60_000)
        expect(second.value).toBe(2)
        expect(Math.abs(second.expiresAt - first.expiresAt)).toBeLessThanOrEqual(tolerance)
      })

      it('starts over once the counter expired', async () => {
        const ttlMs = 20
        const first = await driver.increment(counterKey('a'), 5, ttlMs)
        await waitUntilPast(first.expiresAt)
        // The new window is long, so a slow machine (an fsync under load) cannot expire it again mid-test.
        const restarted = await driver.increment(counterKey('a'), 3, 60_000)
        expect(restarted.value).toBe(3)
        expect(restarted.expiresAt).toBeGreaterThan(first.expiresAt)
        expect((await driver.increment(counterKey('a'), 1, 60_000)).value).toBe(4)
      })
    })

    describe('incrementMany (where the driver offers it)', () => {
      it('adds to each counter in one call and answers in the order asked, each with its own expiry', async () => {
        if (!driver.incrementMany) return
        await driver.increment(counterKey('b'), 10, 60_000)
        const results = await driver.incrementMany([
          { key: counterKey('c'), amount: 1, ttlMs: 60_000 },
          { key: counterKey('b'), amount: 2, ttlMs: 60_000 },
          { key: counterKey('a'), amount: -3, ttlMs: 30_000 },
        ])
        expect(results.map((result) => result.value)).toEqual([1, 12, -3])
        expect(results[2]!.expiresAt).toBeLessThan(results[0]!.expiresAt)
        expect((await driver.increment(counterKey('a'), 0, 60_000)).value).toBe(-3)
        expect(await driver.incrementMany([])).toEqual([])
      })

      it('refuses a batch that names one counter twice, changing nothing', async () => {
        if (!driver.incrementMany) return
        expect(await rejectionOf(driver.incrementMany([{ key: counterKey('a'), amount: 1, ttlMs: 60_000 }, { key: counterKey('a'), amount: 1, ttlMs: 60_000 }]))).toBeInstanceOf(TypeError)
        expect((await driver.increment(counterKey('a'), 0, 60_000)).value).toBe(0)
      })

      it('adds up concurrent batches over the same counters exactly', async () => {
        if (!driver.incrementMany) return
        const keys = ['a', 'b', 'c', 'd'].map(counterKey)
        // Each batch names the counters in another order: the driver must not deadlock on them.
        await Promise.all(
          Array.from({ length: 12 }, (_, batch) => driver.incrementMany!(keys.map((_, index) => ({ key: keys[(index + batch) % keys.length]!, amount: 1, ttlMs: 60_000 })))),
        )
        for (const key of keys) expect((await driver.increment(key, 0, 60_000)).value).toBe(12)
      })
    })

    describe('argument checks', () => {
      const typeErrorOf = async (promise: Promise<unknown>) =>
        expect(await rejectionOf(promise)).toBeInstanceOf(TypeError)

      it('rejects bad ids, collections and record inputs with a TypeError', async () => {
        await typeErrorOf(driver.create(widgets, { id: '', data: {} }))
        await typeErrorOf(driver.create('', { id: 'w1', data: {} }))
        await typeErrorOf(driver.create(widgets, { id: 'w1', data: [] as unknown as JsonObject }))
        await typeErrorOf(driver.create(widgets, { id: 'w1', data: {}, uniques: ['a', 'a'] }))
        await typeErrorOf(driver.get(widgets, ''))
        await typeErrorOf(driver.delete(widgets, ''))
        await typeErrorOf(driver.update(widgets, '', 1, { id: '', data: {} }))
        expect(await driver.list(widgets)).toEqual({ items: [], totalCount: 0 })
      })

      it('rejects a bad offset or limit with a TypeError', async () => {
        const bad: ListQuery[] = [
          { offset: -1 },
          { offset: 1.5 },
          { limit: -1 },
          { limit: 0.5 },
          { offset: Number.NaN },
        ]
        for (const query of bad) await typeErrorOf(driver.list(widgets, query))
      })

      it('rejects a bad counter key, amount or ttl with a TypeError', async () => {
        await typeErrorOf(driver.increment(counterKey('a'), 1, 0))
        await typeErrorOf(driver.increment(counterKey('a'), 1, -5))
        await typeErrorOf(driver.increment(counterKey('a'), Number.NaN, 1_000))
        await typeErrorOf(driver.increment('', 1, 1_000))
        expect((await driver.increment(counterKey('a'), 1, 1_000)).value).toBe(1)
      })

      // Every driver sits behind the same front door (src/storage/checked.ts): these reach none of them.
      it('rejects a bad unique key, batch, version or query with a TypeError, changing nothing', async () => {
        await driver.create(widgets, widget('w1'))
        await typeErrorOf(driver.findByUnique(widgets, ''))
        await typeErrorOf(driver.findByUnique('', 'slug'))
        await typeErrorOf(driver.createMany(widgets, widget('w2') as unknown as RecordInput[]))
        await typeErrorOf(driver.createMany('', [widget('w2')]))
        await typeErrorOf(driver.update(widgets, 'w1', 0, widget('w1')))
        await typeErrorOf(driver.update(widgets, 'w1', 1.5, widget('w1')))
        await typeErrorOf(driver.update(widgets, 'w1', 1, widget('w1', { uniques: [''] })))
        await typeErrorOf(driver.update(widgets, 'w1', 1, widget('w1', { indexes: { day: 1 as unknown as string } })))
        await typeErrorOf(driver.update(widgets, 'w1', 1, widget('w1', { sortKey: 1 as unknown as string })))
        await typeErrorOf(driver.delete(widgets, 'w1', 0))
        await typeErrorOf(driver.list(widgets, null as unknown as ListQuery))
        await typeErrorOf(driver.list(widgets, { where: { day: 1 as unknown as string } }))
        await typeErrorOf(driver.list('', {}))
        if (driver.incrementMany) {
          await typeErrorOf(driver.incrementMany({} as unknown as CounterChange[]))
          await typeErrorOf(driver.incrementMany([{ key: counterKey('a'), amount: 1, ttlMs: 1_000 }, { key: '', amount: 1, ttlMs: 1_000 }]))
          await typeErrorOf(driver.incrementMany([null as unknown as CounterChange]))
        }
        expect(await driver.list(widgets)).toMatchObject({ items: [{ id: 'w1', version: 1 }], totalCount: 1 })
        expect((await driver.increment(counterKey('a'), 0, 1_000)).value).toBe(0)
      })
    })

    describe('close', () => {
      it('makes every method reject and can be called again', async () => {
        await driver.create(widgets, widget('w1'))
        await driver.close()
        const calls: Array<Promise<unknown>> = [
          driver.create(widgets, widget('w2')),
          driver.get(widgets, 'w1'),
          driver.findByUnique(widgets, 'slug'),
          driver.update(widgets, 'w1', 1, widget('w1')),
          driver.delete(widgets, 'w1'),
          driver.list(widgets),
          driver.increment(counterKey('a'), 1, 1_000),
        ]
        for (const call of calls) expect(await rejectionOf(call)).toBeInstanceOf(Error)
        await driver.close()
      })
    })

    describe('concurrency', () => {
      it('lets exactly one of 20 parallel creates claim a unique key', async () => {
        const attempts = Array.from({ length: 20 }, (_, index) =>
          settle(driver.create(widgets, widget(`w${index}`, { uniques: ['slug:contested'] }))),
        )
        const outcomes = await Promise.all(attempts)
        const winners = outcomes.flatMap((outcome) => ('value' in outcome ? [outcome.value] : []))
        const losers = outcomes.flatMap((outcome) => ('error' in outcome ? [outcome.error] : []))
        expect(winners).toHaveLength(1)
        expect(losers.every((error) => isConflict(error, 'unique'))).toBe(true)
        expect((await driver.findByUnique(widgets, 'slug:contested'))?.id).toBe(winners[0]?.id)
        expect((await driver.list(widgets)).totalCount).toBe(1)
      })

      it('lets exactly one of 20 parallel creates of the same id win', async () => {
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, (_, index) => settle(driver.create(widgets, { id: 'same', data: { index } }))),
        )
        const winners = outcomes.flatMap((outcome) => ('value' in outcome ? [outcome.value] : []))
        expect(winners).toHaveLength(1)
        expect(outcomes.filter((outcome) => 'error' in outcome && isConflict(outcome.error, 'unique'))).toHaveLength(19)
        expect(await driver.get(widgets, 'same')).toEqual(winners[0])
      })

      it('lets exactly one of 20 parallel updates from the same version win', async () => {
        await driver.create(widgets, widget('w1'))
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, (_, index) =>
            settle(driver.update(widgets, 'w1', 1, { id: 'w1', data: { index } })),
          ),
        )
        const winners = outcomes.flatMap((outcome) => ('value' in outcome && outcome.value ? [outcome.value] : []))
        expect(winners).toHaveLength(1)
        expect(outcomes.filter((outcome) => 'error' in outcome && isConflict(outcome.error, 'version'))).toHaveLength(
          19,
        )
        expect(winners[0]?.version).toBe(2)
        expect(await driver.get(widgets, 'w1')).toEqual(winners[0])
      })

      it('adds up 50 parallel increments exactly, each seeing a distinct value', async () => {
        const results = await Promise.all(
          Array.from({ length: 50 }, () => driver.increment(counterKey('parallel'), 1, 60_000)),
        )
        expect(results.map((result) => result.value).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 50 }, (_, index) => index + 1),
        )
        const expiries = results.map((result) => result.expiresAt)
        expect(Math.max(...expiries) - Math.min(...expiries)).toBeLessThanOrEqual(tolerance)
        expect((await driver.increment(counterKey('parallel'), 0, 60_000)).value).toBe(50)
      })
    })

    describeConcurrentUpdates(() => driver)
    describeSpendLimits(() => driver)
    describeTallies(() => driver, { now, waitUntilPast })

    describe('random operations against a model', () => {
      type Outcome = { value: unknown } | { conflict: StorageConflictKind }

      const outcomeOf = async (promise: Promise<unknown>): Promise<Outcome> => {
        const settled = await settle(promise)
        if ('value' in settled) return { value: settled.value }
        const { error } = settled
        if (isConflict(error, 'unique')) return { conflict: 'unique' }
        if (isConflict(error, 'version')) return { conflict: 'version' }
        throw error
      }

      it('agrees with a simple model over 300 seeded operations', async () => {
        const random = seededRandom(20240601)
        const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!
        const model = new Map<string, StoredRecord>()
        const ids = ['a', 'b', 'c', 'd', 'e', 'f']
        const uniqueKeys = ['u1', 'u2', 'u3', 'u4']

        const randomInput = (id: string, step: number): RecordInput => ({
          id,
          data: { step },
          indexes: { color: pick(['red', 'blue']), size: pick(['s', 'm']) },
          uniques: uniqueKeys.filter(() => random() < 0.25),
          sortKey: pick(['', 'x', 'Y', 'y']),
        })
        const toRecord = (input: RecordInput, version: number): StoredRecord => ({
          id: input.id,
          data: input.data,
          version,
          indexes: { ...input.indexes },
          uniques: [...(input.uniques ?? [])],
          sortKey: input.sortKey ?? '',
        })
        const heldByOther = (id: string, keys: string[]) =>
          [...model.values()].some((record) => record.id !== id && record.uniques.some((key) => keys.includes(key)))
        const modelList = (query: ListQuery) => {
          const matches = [...model.values()]
            .filter((record) =>
              Object.entries(query.where ?? {}).every(([field, value]) => record.indexes[field] === value),
            )
            .sort((a, b) =>
              a.sortKey !== b.sortKey ? (a.sortKey < b.sortKey ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
            )
          const start = query.offset ?? 0
          return {
            items: matches.slice(start, query.limit === undefined ? undefined : start + query.limit),
            totalCount: matches.length,
          }
        }

        for (let step = 0; step < 300; step++) {
          const id = pick(ids)
          const current = model.get(id)
          const operation = pick(['create', 'create', 'update', 'update', 'delete', 'get', 'find', 'list'] as const)
          const context = `step ${step}: ${operation} ${id}`

          if (operation === 'create') {
            const input = randomInput(id, step)
            const actual = await outcomeOf(driver.create(widgets, input))
            const isRefused = current !== undefined || heldByOther(id, input.uniques ?? [])
            const expected: Outcome = isRefused ? { conflict: 'unique' } : { value: toRecord(input, 1) }
            expect(actual, context).toEqual(expected)
            if (!isRefused) model.set(id, toRecord(input, 1))
          } else if (operation === 'update') {
            const input = randomInput(id, step)
            const expectedVersion = current && random() < 0.7 ? current.version : pick([1, 2, 3])
            const actual = await outcomeOf(driver.update(widgets, id, expectedVersion, input))
            // When both the version and a unique key are wrong, a driver may report either.
            const acceptable: Outcome[] = []
            if (!current) acceptable.push({ value: null })
            else {
              if (current.version !== expectedVersion) acceptable.push({ conflict: 'version' })
              if (heldByOther(id, input.uniques ?? [])) acceptable.push({ conflict: 'unique' })
              if (acceptable.length === 0) acceptable.push({ value: toRecord(input, current.version + 1) })
            }
            expect(acceptable, context).toContainEqual(actual)
            if ('value' in actual && actual.value) model.set(id, actual.value as StoredRecord)
          } else if (operation === 'delete') {
            const expectedVersion = random() < 0.5 ? undefined : current && random() < 0.7 ? current.version : 1
            const actual = await outcomeOf(driver.delete(widgets, id, expectedVersion))
            const expected: Outcome = !current
              ? { value: false }
              : expectedVersion !== undefined && expectedVersion !== current.version
              ? { conflict: 'version' }
              : { value: true }
            expect(actual, context).toEqual(expected)
            if ('value' in actual && actual.value === true) model.delete(id)
          } else if (operation === 'get') {
            expect(await driver.get(widgets, id), context).toEqual(current ?? null)
          } else if (operation === 'find') {
            const key = pick(uniqueKeys)
            const holder = [...model.values()].find((record) => record.uniques.includes(key))
            expect(await driver.findByUnique(widgets, key), context).toEqual(holder ?? null)
          } else {
            const query: ListQuery = {
              where: pick<Record<string, string>>([{}, { color: 'red' }, { color: 'blue', size: 's' }]),
              offset: pick([undefined, 0, 1, 3]),
              limit: pick([undefined, 0, 2, 4]),
            }
            expect(await driver.list(widgets, query), context).toEqual(modelList(query))
          }
        }
        expect(await driver.list(widgets)).toEqual(modelList({}))
      })
    })
  })
}
