/**
 * The SQL driver's own cases, run against PostgreSQL and MariaDB by `postgres.test.ts` and
 * `mariadb.test.ts`: the shared contract, plus what only a shared SQL server shows (several driver
 * instances on one schema, migrations racing, rows left after a failed write, a network that goes
 * away). Each run works in its own schema or database, dropped afterwards.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import type { StorageDriver } from '../../src/storage/contract'
import { openSqlStorage, sqlStorage, type SqlStorageOptions } from '../../src/storage/sql'
import type { Dialect, DialectSettings, SqlSession } from '../../src/storage/sql/dialect'
import { createSqlDriver } from '../../src/storage/sql/driver'
import { MIGRATIONS } from '../../src/storage/sql/migrations'
import { requireServer, uniqueNamespace } from '../helpers/stores'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy'
import { describeStorageContract } from './contract'
import { describeGenerationLedger } from './generations'
import { describeAuditLog } from './audit-log'
import { describeStoredResponses } from './stored-responses'
import { describePresets } from './presets'
import { describeSqlTallies } from './sql-tallies'

export interface SqlTarget {
  /** Suite name, also the driver's `name` for `url()`. */
  name: string
  port: number
  /** A URL for the server, or for a proxy in front of it on `port`. */
  url(port?: number): string
  /** Runs SQL with `?` placeholders as an administrator. */
  raw(text: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>
  /** The qualified name of one of the driver's tables in `namespace`. */
  table(namespace: string, table: string): string
  /** An expression giving a JSON column's stored text. */
  jsonText(column: string): string
  dropNamespace(namespace: string): Promise<void>
  /** Closes the administrator connection. */
  end(): Promise<void>
  /** The dialect `sqlStorage` builds for this server, with `settings.schema` as its schema or database. */
  createDialect(settings: DialectSettings): Promise<Dialect>
  /**
   * Statements (each one round trip) that store a batch of new records with index rows, as the usage
   * ledger writes: one on both servers (PostgreSQL's data-modifying WITH, MariaDB's stored procedure);
   * a dialect with neither would take `BEGIN`, two inserts, `COMMIT`.
   */
  statementsPerBatch: number
  /** Answers this session's id (`id`), as `waitersQuery` takes it. */
  sessionIdQuery: string
  /** Counts (`n`) the sessions waiting for a lock the session with id `?` holds. */
  waitersQuery: string
}

/** Far above every timeout the tests set: a call still pending after this has hung. */
const HANG_MS = 5_000

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

/** Settles `promise`, failing the test if it is still pending after `HANG_MS`. */
const boundedly = <T>(promise: Promise<T>): Promise<T> => {
  let timer: NodeJS.Timeout | undefined
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${HANG_MS} ms`)), HANG_MS)
  })
  return Promise.race([promise, hang]).finally(() => clearTimeout(timer))
}

const expectUnavailable = async (promise: Promise<unknown>, message = 'Storage is unavailable') => {
  const error = await boundedly(rejectionOf(promise))
  expect(isGatewayError(error), `expected a GatewayError, got ${String(error)}`).toBe(true)
  expect(error).toMatchObject({ status: 503, name: 'StorageUnavailableError', message })
}

const settle = async <T>(promise: Promise<T>) => {
  try {
    return { value: await promise }
  } catch (error) {
    return { error }
  }
}

const conflictKind = (error: unknown) => (isGatewayError(error) ? (error as { kind?: string }).kind : undefined)

/** Polls `attempt` (bounded in time) until it resolves. */
const eventually = <T>(attempt: () => Promise<T>, withinMs = 15_000): Promise<T> => vi.waitFor(attempt, { timeout: withinMs, interval: 25 })

/** A driver whose sessions write down every statement they send, opened (migrated) already. */
export const openCountingDriver = async (target: Pick<SqlTarget, 'name' | 'createDialect'>, options: { url: string; schema: string }) => {
  const statements: string[] = []
  const settings = { ...options, tablePrefix: 'modelgate_', queryTimeoutMs: 5_000, connectTimeoutMs: 3_000, migrationTimeoutMs: 60_000 }
  const counting = (session: SqlSession): SqlSession =>
    new Proxy(session, {
      get(inner, name) {
        if (name === 'query') return (text: string, params?: Parameters<SqlSession['query']>[1]) => (statements.push(text), inner.query(text, params))
        const value: unknown = Reflect.get(inner, name, inner)
        return typeof value === 'function' ? value.bind(inner) : value
      },
    })
  const { driver, ready } = createSqlDriver({
    name: target.name,
    loadDialect: async () => {
      const dialect = await target.createDialect(settings)
      return { ...dialect, connect: async () => counting(await dialect.connect()) }
    },
    poolSize: 2,
    queryTimeoutMs: settings.queryTimeoutMs,
    migrationTimeoutMs: settings.migrationTimeoutMs,
  })
  try {
    await ready()
  } catch (error) {
    await driver.close()
    throw error
  }
  return { driver, statements }
}

export function describeSqlDriver(target: SqlTarget): void {
  const namespace = uniqueNamespace('sql')
  const namespaces = [namespace]
  const drivers: StorageDriver[] = []
  const proxies: TcpProxy[] = []

  /** Opens a driver on this run's namespace, closed after the test even when an assertion fails. */
  const open = async (options: Partial<SqlStorageOptions> = {}) => {
    const driver = await openSqlStorage({ url: target.url(), schema: namespace, ...options })
    drivers.push(driver)
    return driver
  }

  /** A driver on this run's namespace whose sessions write down every statement they send. */
  const openCounting = async () => {
    const counting = await openCountingDriver(target, { url: target.url(), schema: namespace })
    drivers.push(counting.driver)
    return counting
  }

  const proxy = async () => {
    const started = await startTcpProxy({ targetPort: target.port })
    proxies.push(started)
    return started
  }

  const count = async (table: string, where: string, params: unknown[], schema = namespace) => {
    const rows = await target.raw(`SELECT COUNT(*) AS n FROM ${target.table(schema, table)} WHERE ${where}`, params)
    return Number(rows[0]?.n)
  }

  beforeAll(() => requireServer(target.port))

  afterEach(async () => {
    await Promise.all(drivers.splice(0).map((driver) => driver.close()))
    await Promise.all(proxies.splice(0).map((started) => started.close()))
  })

  afterAll(async () => {
    for (const name of namespaces) await target.dropNamespace(name)
    await target.end()
  })

  describeStorageContract(target.name, () => openSqlStorage({ url: target.url(), schema: namespace }), {
    // The database clock is this machine's, read to the millisecond.
    clockToleranceMs: 20,
  })

  describeGenerationLedger(target.name, () => openSqlStorage({ url: target.url(), schema: namespace }))

  describePresets(target.name, () => openSqlStorage({ url: target.url(), schema: namespace }))
  describeAuditLog(target.name, () => openSqlStorage({ url: target.url(), schema: namespace }))
  describeStoredResponses(target.name, () => openSqlStorage({ url: target.url(), schema: namespace }))

  describeSqlTallies({
    target,
    namespace,
    freshNamespace(kind) {
      const fresh = uniqueNamespace(kind)
      namespaces.push(fresh)
      return fresh
    },
    open,
    openCounting,
  })

  describe(`${target.name} driver`, () => {
    it('is named after the URL scheme and checks its options when built', async () => {
      const driver = sqlStorage({ url: target.url(), schema: namespace })
      expect(driver.name).toBe(target.name)
      await driver.close()
      const secretUrl = target.url().replace('//', '//someone:hunter2@')
      const bad: Array<Partial<SqlStorageOptions>> = [
        { url: '' },
        { url: 'not a url' },
        { url: 'http://127.0.0.1/test' },
        { url: 'postgres://a,b/test' },
        { schema: 'Mixed_Case' },
        { schema: '1st' },
        { schema: 'x'.repeat(64) },
        { tablePrefix: 'has-dash' },
        { tablePrefix: 'x'.repeat(41) },
        { poolSize: 0 },
        { poolSize: 1.5 },
        { queryTimeoutMs: 0 },
        { connectTimeoutMs: -1 },
      ]
      for (const options of bad) {
        expect(() => sqlStorage({ url: secretUrl, ...options } as SqlStorageOptions), JSON.stringify(options)).toThrow(
          TypeError,
        )
      }
      expect(() => sqlStorage({ url: secretUrl, poolSize: 0 })).toThrow(/^sqlStorage: options\.poolSize/)
      try {
        sqlStorage({ url: secretUrl, poolSize: 0 })
      } catch (error) {
        expect(String(error)).not.toContain('hunter2')
      }
      await expect(openSqlStorage({ url: secretUrl, tablePrefix: 'UPPER' })).rejects.toThrow(TypeError)
    })

    it('refuses keys the database could not store exactly, and finds none of them', async () => {
      const driver = await open()
      const widgets = uniqueNamespace('widgets')
      const typeError = async (promise: Promise<unknown>) => expect(await rejectionOf(promise)).toBeInstanceOf(TypeError)
      await typeError(driver.create(widgets, { id: 'x'.repeat(513), data: {} }))
      await typeError(driver.create(widgets, { id: 'nul\0inside', data: {} }))
      await typeError(driver.create(widgets, { id: 'w1', data: {}, uniques: ['lone \uD800 surrogate'] }))
      await typeError(driver.create(widgets, { id: 'w1', data: {}, indexes: { color: 'r'.repeat(1025) } }))
      await typeError(driver.create(widgets, { id: 'w1', data: {}, sortKey: 's'.repeat(1025) }))
      await typeError(driver.create('c'.repeat(256), { id: 'w1', data: {} }))
      await typeError(driver.increment('k'.repeat(1025), 1, 1_000))
      expect(await driver.list(widgets)).toEqual({ items: [], totalCount: 0 })

      expect(await driver.get(widgets, 'x'.repeat(513))).toBeNull()
      expect(await driver.get(widgets, 'nul\0inside')).toBeNull()
      expect(await driver.findByUnique(widgets, 'lone \uD800 surrogate')).toBeNull()
      expect(await driver.list(widgets, { where: { color: '\0' } })).toEqual({ items: [], totalCount: 0 })
      expect(await driver.delete(widgets, 'x'.repeat(513))).toBe(false)

      // The limits count UTF-8 bytes: 128 four-byte characters fill an id exactly.
      const longest = '😀'.repeat(128)
      await driver.create(widgets, { id: longest, data: { ok: true }, sortKey: '\uFFFF' })
      await driver.create(widgets, { id: 'plain', data: {}, sortKey: 'é' })
      expect((await driver.get(widgets, longest))?.data).toEqual({ ok: true })
      expect((await driver.list(widgets)).items.map((item) => item.id)).toEqual(['plain', longest])
    })

    it('migrates once, however often and however concurrently drivers open', async () => {
      const fresh = uniqueNamespace('sql_migrate')
      namespaces.push(fresh)
      const openFresh = async () => {
        const driver = await openSqlStorage({ url: target.url(), schema: fresh })
        drivers.push(driver)
        return driver
      }
      const [first] = await Promise.all([openFresh(), openFresh(), openFresh()])
      await openFresh()
      const versions = await target.raw(
        `SELECT version, COUNT(*) AS n FROM ${target.table(fresh, 'migrations')} GROUP BY version ORDER BY version`,
      )
      expect(versions.map((row) => [Number(row.version), Number(row.n)])).toEqual(MIGRATIONS.map((migration) => [migration.version, 1]))
      await first!.create('widgets', { id: 'w1', data: { n: 1 }, uniques: ['slug:a'], indexes: { color: 'red' } })
      expect(await count('records', 'id = ?', ['w1'], fresh)).toBe(1)
    })

    it('keeps the tables of two prefixes in one schema apart', async () => {
      const widgets = uniqueNamespace('widgets')
      const plain = await open()
      const other = await open({ tablePrefix: 'other_' })
      await plain.create(widgets, { id: 'w1', data: { side: 'plain' }, uniques: ['slug:a'] })
      await other.create(widgets, { id: 'w1', data: { side: 'other' }, uniques: ['slug:a'] })
      expect((await plain.get(widgets, 'w1'))?.data).toEqual({ side: 'plain' })
      expect((await other.get(widgets, 'w1'))?.data).toEqual({ side: 'other' })
    })

    it('stores data as the exact text JSON.stringify wrote', async () => {
      const driver = await open()
      const widgets = uniqueNamespace('widgets')
      const data = {
        zebra: 1,
        apple: 'x\u0000y',
        emoji: '😀 ünïcödé',
        lone: '\uD800',
        sum: 0.1 + 0.2,
        big: 1e300,
        tiny: -5e-324,
        nested: { list: [null, true, { deep: [] }], empty: {} },
      }
      await driver.create(widgets, { id: 'w1', data })
      const [row] = await target.raw(
        `SELECT ${target.jsonText('data')} AS text FROM ${target.table(namespace, 'records')} WHERE collection = ? AND id = ?`,
        [widgets, 'w1'],
      )
      expect(row?.text).toBe(JSON.stringify(data))
      const stored = await driver.get(widgets, 'w1')
      expect(stored?.data).toEqual(data)
      expect(Object.keys(stored?.data ?? {})).toEqual(Object.keys(data))
      expect(await driver.increment(uniqueNamespace('sum'), 0.1, 60_000)).toMatchObject({ value: 0.1 })
    })

    it('leaves no row behind when a write fails halfway', async () => {
      const driver = await open()
      const widgets = uniqueNamespace('widgets')
      await driver.create(widgets, { id: 'w1', data: {}, uniques: ['slug:taken'], indexes: { color: 'red' } })
      const refused = await rejectionOf(
        driver.create(widgets, {
          id: 'w2',
          data: {},
          uniques: ['slug:free', 'slug:taken'],
          indexes: { color: 'blue', size: 's' },
        }),
      )
      expect(conflictKind(refused)).toBe('unique')
      expect(await count('records', 'collection = ? AND id = ?', [widgets, 'w2'])).toBe(0)
      expect(await count('uniques', 'collection = ? AND record_id = ?', [widgets, 'w2'])).toBe(0)
      expect(await count('indexes', 'collection = ? AND record_id = ?', [widgets, 'w2'])).toBe(0)

      await driver.create(widgets, { id: 'w3', data: {}, uniques: ['slug:other'] })
      const refusedUpdate = await rejectionOf(
        driver.update(widgets, 'w1', 1, { id: 'w1', data: { n: 2 }, uniques: ['slug:new', 'slug:other'], indexes: {} }),
      )
      expect(conflictKind(refusedUpdate)).toBe('unique')
      const uniques = await target.raw(
        `SELECT unique_key FROM ${target.table(namespace, 'uniques')} WHERE collection = ? AND record_id = ?`,
        [widgets, 'w1'],
      )
      expect(uniques.map((row) => String(row.unique_key))).toEqual(['slug:taken'])
      expect(await count('indexes', 'collection = ? AND record_id = ? AND field = ?', [widgets, 'w1', 'color'])).toBe(1)
      expect(await count('records', 'collection = ? AND id = ? AND version = 1', [widgets, 'w1'])).toBe(1)
    })

    it(`stores a batch of new records in ${target.statementsPerBatch} statement(s), all or nothing`, async () => {
      const { driver, statements } = await openCounting()
      const generations = uniqueNamespace('generations')
      // The usage ledger's shape: fresh ids, two index rows each, no unique keys.
      const batch = (ids: string[]) => ids.map((id) => ({ id, data: { id }, sortKey: `2025-01-01T00:00:0${id.at(-1)}Z`, indexes: { account: 'a1', day: 'a1:2025-01-01' } }))
      statements.length = 0
      expect((await driver.createMany(generations, batch(['g1', 'g2', 'g3']))).map((record) => record?.id)).toEqual(['g1', 'g2', 'g3'])
      expect(statements).toHaveLength(target.statementsPerBatch)
      expect(await count('indexes', 'collection = ? AND field = ?', [generations, 'day'])).toBe(3)

      // A taken id fails the batch's write; each record is then stored on its own, once.
      expect((await driver.createMany(generations, batch(['g4', 'g1']))).map((record) => record?.id ?? null)).toEqual(['g4', null])
      expect(await count('records', 'collection = ?', [generations])).toBe(4)
      expect(await count('indexes', 'collection = ? AND record_id = ?', [generations, 'g4'])).toBe(2)
    })

    it('stores a batch of awkward keys and data byte for byte', async () => {
      const driver = await open()
      const collection = uniqueNamespace('awkward')
      // Every key a JSON batch could mangle: escapes, quotes, control characters, non-ASCII, and trailing spaces
      // (which a padding collation would ignore, so 'pad' and 'pad ' must stay two ids).
      const keys = [
        'pad',
        'pad ',
        ' leading and trailing  ',
        `quote's "double" \`back\``,
        'back\\slash \\u0000 \\" \\n',
        'ünïcödé é 😀 \u2028\u2029 \uFFFF',
        'control \u0001\u0008\t\n\r\u001f\u007f',
        'json [1,{"a":2}] $[0] %_',
      ]
      const inputs = keys.map((key, index) => ({
        id: key,
        data: { [key]: key, nul: 'x\u0000y', lone: '\uD800', sum: 0.1 + 0.2, big: 1e300, order: { z: 1, a: [index] } },
        sortKey: key,
        uniques: [`u:${key}`, `v:${key}`],
        indexes: { [`field ${key}`]: key, plain: `value ${key}` },
      }))
      const created = await driver.createMany(collection, inputs)
      expect(created.map((record) => record?.id)).toEqual(keys)

      const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))
      const records = await target.raw(
        `SELECT id, version, ${target.jsonText('data')} AS data, sort_key, ${target.jsonText('indexes_json')} AS indexes_json,
           ${target.jsonText('uniques_json')} AS uniques_json FROM ${target.table(namespace, 'records')} WHERE collection = ?`,
        [collection],
      )
      const stored = new Map(records.map((row) => [text(row.id), row]))
      expect(stored.size).toBe(keys.length)
      for (const input of inputs) {
        const row = stored.get(input.id)
        expect(row, JSON.stringify(input.id)).toBeDefined()
        expect(Number(row!.version)).toBe(1)
        expect(text(row!.data)).toBe(JSON.stringify(input.data))
        expect(text(row!.sort_key)).toBe(input.sortKey)
        expect(text(row!.indexes_json)).toBe(JSON.stringify(input.indexes))
        expect(text(row!.uniques_json)).toBe(JSON.stringify(input.uniques))
      }
      const uniques = await target.raw(`SELECT unique_key, record_id FROM ${target.table(namespace, 'uniques')} WHERE collection = ?`, [collection])
      expect(uniques.map((row) => [text(row.unique_key), text(row.record_id)]).sort()).toEqual(
        inputs.flatMap((input) => input.uniques.map((key) => [key, input.id])).sort(),
      )
      const indexes = await target.raw(`SELECT field, value, record_id FROM ${target.table(namespace, 'indexes')} WHERE collection = ?`, [collection])
      expect(indexes.map((row) => [text(row.field), text(row.value), text(row.record_id)]).sort()).toEqual(
        inputs.flatMap((input) => Object.entries(input.indexes).map(([field, value]) => [field, value, input.id])).sort(),
      )

      for (const [index, input] of inputs.entries()) {
        const record = await driver.get(collection, input.id)
        expect(record).toEqual(created[index])
        expect(Object.keys(record!.data)).toEqual(Object.keys(input.data))
        expect((await driver.findByUnique(collection, `v:${input.id}`))?.id).toBe(input.id)
        expect((await driver.list(collection, { where: { [`field ${input.id}`]: input.id } })).items.map((item) => item.id)).toEqual([input.id])
      }
      expect((await driver.list(collection)).items.map((item) => item.id)).toEqual([...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
    })

    it('rolls back a batch that holds one id twice, then stores its records one by one', async () => {
      const { driver, statements } = await openCounting()
      const collection = uniqueNamespace('twice')
      statements.length = 0
      const created = await driver.createMany(collection, [
        { id: 'a', data: { n: 1 }, uniques: ['slug:a'], indexes: { kind: 'first' } },
        { id: 'b', data: { n: 2 }, uniques: ['slug:b'], indexes: { kind: 'first' } },
        { id: 'a', data: { n: 3 }, uniques: ['slug:other'], indexes: { kind: 'second' } },
      ])
      // Had the batch's write left any row behind, storing 'a' and 'b' on their own would have failed.
      expect(created.map((record) => record?.id ?? null)).toEqual(['a', 'b', null])
      // The batch's one failed statement, then one per record (a record alone is a batch of one).
      expect(statements).toHaveLength(1 + 3 * target.statementsPerBatch)
      expect((await driver.get(collection, 'a'))?.data).toEqual({ n: 1 })
      expect(await count('records', 'collection = ?', [collection])).toBe(2)
      expect(await count('uniques', 'collection = ?', [collection])).toBe(2)
      expect(await driver.findByUnique(collection, 'slug:other')).toBeNull()
      expect(await count('indexes', 'collection = ? AND field = ? AND value = ?', [collection, 'kind', 'first'])).toBe(2)
      expect(await count('indexes', 'collection = ?', [collection])).toBe(2)
    })

    it('lets two drivers on one schema race: one compare-and-set winner, one unique winner, shared counters', async () => {
      const [a, b] = await Promise.all([open({ poolSize: 5 }), open({ poolSize: 5 })])
      const pick = (index: number) => (index % 2 === 0 ? a : b)
      const widgets = uniqueNamespace('widgets')

      await a.create(widgets, { id: 'w1', data: { n: 0 } })
      const updates = await Promise.all(
        Array.from({ length: 20 }, (_, index) => settle(pick(index).update(widgets, 'w1', 1, { id: 'w1', data: { n: index } }))),
      )
      expect(updates.filter((outcome) => 'value' in outcome)).toHaveLength(1)
      expect(updates.filter((outcome) => 'error' in outcome && conflictKind(outcome.error) === 'version')).toHaveLength(19)

      const creates = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          settle(pick(index).create(widgets, { id: `c${index}`, data: {}, uniques: ['slug:contested'] })),
        ),
      )
      const winners = creates.flatMap((outcome) => ('value' in outcome ? [outcome.value] : []))
      expect(winners).toHaveLength(1)
      expect(creates.filter((outcome) => 'error' in outcome && conflictKind(outcome.error) === 'unique')).toHaveLength(19)
      expect((await b.findByUnique(widgets, 'slug:contested'))?.id).toBe(winners[0]?.id)

      const key = uniqueNamespace('counter')
      const counts = await Promise.all(Array.from({ length: 20 }, (_, index) => pick(index).increment(key, 1, 60_000)))
      expect(counts.map((result) => result.value).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 20 }, (_, index) => index + 1),
      )
      expect(new Set(counts.map((result) => result.expiresAt)).size).toBe(1)
    })

    it('sweeps expired counters in the background', async () => {
      const expired = uniqueNamespace('expired')
      const driver = await open()
      await driver.increment(uniqueNamespace('first'), 1, 60_000)
      await target.raw(
        `INSERT INTO ${target.table(namespace, 'counters')} (counter_key, value, expires_at) VALUES (?, 1, 1)`,
        [expired],
      )
      // Each driver sweeps on its first increment, then at most once a minute.
      const fresh = await open()
      await fresh.increment(uniqueNamespace('trigger'), 1, 60_000)
      await eventually(async () => {
        if ((await count('counters', 'counter_key = ?', [expired])) !== 0) throw new Error('not swept yet')
      })
    })

    it('fails fast with a 503 when the server is unreachable', async () => {
      const unreachable = { url: target.url(1), schema: namespace, connectTimeoutMs: 500, queryTimeoutMs: 500 }
      const error = await boundedly(rejectionOf(openSqlStorage(unreachable)))
      expect(error).toMatchObject({ status: 503, name: 'StorageUnavailableError', message: 'Storage is unavailable' })
      expect((error as Error).cause).toBeDefined()

      const background = sqlStorage(unreachable)
      await expectUnavailable(background.get('widgets', 'w1'))
      await expectUnavailable(background.increment('counter', 1, 1_000))
      await expectUnavailable(background.hold({ id: 'h1', owner: 'o', leaseMs: 1_000, changes: [{ key: 'spend:a', amount: 1, ttlMs: 1_000 }] }))
      await expectUnavailable(background.settle([{ id: 'h1', changes: [] }]))
      await expectUnavailable(background.readTallies(['spend:a']))
      await boundedly(background.close())
      await expectUnavailable(background.get('widgets', 'w1'), 'Storage is closed')
    })

    it('answers 503 while the connection is cut, and recovers by itself', async () => {
      const cutter = await proxy()
      const driver = await open({ url: target.url(cutter.port), queryTimeoutMs: 500, connectTimeoutMs: 500 })
      const widgets = uniqueNamespace('widgets')
      await driver.create(widgets, { id: 'w1', data: { n: 1 } })

      void cutter.cut()
      await expectUnavailable(driver.get(widgets, 'w1'))
      await expectUnavailable(driver.create(widgets, { id: 'w2', data: {}, uniques: ['slug:w2'] }))
      await expectUnavailable(driver.increment(uniqueNamespace('counter'), 1, 60_000))
      await expectUnavailable(driver.list(widgets))
      const tally = uniqueNamespace('spend')
      await expectUnavailable(driver.hold({ id: `${tally}-hold`, owner: 'o', leaseMs: 60_000, changes: [{ key: tally, amount: 5, ttlMs: 60_000 }] }))
      await expectUnavailable(driver.settle([{ id: `${tally}-settled`, changes: [{ key: tally, amount: 1, ttlMs: 60_000 }] }]))
      await expectUnavailable(driver.renewHolds([`${tally}-hold`], 60_000))
      await expectUnavailable(driver.releaseExpiredHolds(10))

      await cutter.restore()
      expect((await eventually(() => driver.get(widgets, 'w1')))?.data).toEqual({ n: 1 })
      expect(await driver.get(widgets, 'w2')).toBeNull()
      await driver.create(widgets, { id: 'w2', data: {}, uniques: ['slug:w2'] })
      // Nothing the refused calls sent landed.
      expect(await driver.readTallies([tally])).toEqual([0])
      await driver.hold({ id: `${tally}-hold`, owner: 'o', leaseMs: 60_000, changes: [{ key: tally, amount: 5, ttlMs: 60_000 }] })
      expect(await driver.readTallies([tally])).toEqual([5])
    })

    it('drops a connection reset in the middle of a call, and serves the next calls on a new one', async () => {
      const cutter = await proxy()
      const driver = await open({ url: target.url(cutter.port), queryTimeoutMs: 10_000, connectTimeoutMs: 500, poolSize: 1 })
      const direct = await open()
      const widgets = uniqueNamespace('widgets')
      await driver.create(widgets, { id: 'w1', data: { n: 1 } })
      const tally = uniqueNamespace('spend')
      // Once first, so its statement is prepared on the connection: from then on a settlement is one round trip.
      await driver.settle([{ id: `${tally}-warm`, changes: [{ key: `${tally}-warm`, amount: 1, ttlMs: 60_000 }] }])
      cutter.dropReplies()
      const pending = rejectionOf(driver.settle([{ id: `${tally}-settled`, changes: [{ key: tally, amount: 1, ttlMs: 60_000 }] }]))
      // The server ran the call and its answer is lost: the call is waiting on its connection when that is reset.
      await eventually(async () => expect(await direct.readTallies([tally])).toEqual([1]))
      await cutter.cut({ shouldReset: true })
      expect(await pending).toMatchObject({ status: 503 })
      await cutter.restore()
      // One session only: had the reset one gone back to the pool, every later call would fail or hang on it.
      expect((await eventually(() => driver.get(widgets, 'w1')))?.data).toEqual({ n: 1 })
      for (let call = 0; call < 3; call++) expect((await driver.get(widgets, 'w1'))?.data).toEqual({ n: 1 })
      // Sent again, the settlement is applied once.
      await driver.settle([{ id: `${tally}-settled`, changes: [{ key: tally, amount: 1, ttlMs: 60_000 }] }])
      expect(await driver.readTallies([tally])).toEqual([1])
    })

    it('answers 503 within the query timeout when the server stops answering, and recovers by itself', async () => {
      const hole = await proxy()
      const driver = await open({ url: target.url(hole.port), queryTimeoutMs: 500, connectTimeoutMs: 500, poolSize: 2 })
      const widgets = uniqueNamespace('widgets')
      await Promise.all([
        driver.create(widgets, { id: 'w1', data: { n: 1 }, uniques: ['slug:w1'] }),
        driver.create(widgets, { id: 'w2', data: { n: 2 } }),
      ])

      hole.blackhole()
      // More calls than connections: the ones waiting for a connection time out too.
      await Promise.all([
        expectUnavailable(driver.get(widgets, 'w1')),
        expectUnavailable(driver.create(widgets, { id: 'w3', data: {}, uniques: ['slug:w3'], indexes: { color: 'red' } })),
        expectUnavailable(driver.update(widgets, 'w2', 1, { id: 'w2', data: { n: 3 } })),
        expectUnavailable(driver.increment(uniqueNamespace('counter'), 1, 60_000)),
      ])
      await expectUnavailable(driver.list(widgets))

      // Old connections stay silent after the restore: the driver must have dropped them itself.
      await hole.restore({ shouldResetBlackholed: false })
      await eventually(() => driver.get(widgets, 'w1'))
      const w3 = await driver.get(widgets, 'w3')
      const w3Rows = await count('uniques', 'collection = ? AND record_id = ?', [widgets, 'w3'])
      expect(w3Rows).toBe(w3 ? 1 : 0)
      expect((await driver.update(widgets, 'w1', 1, { id: 'w1', data: { n: 9 } }))?.version).toBe(2)
      expect((await driver.list(widgets)).totalCount).toBe(w3 ? 3 : 2)
    })

    it('never runs a call that timed out while connecting, even once the connection comes up', async () => {
      const hole = await proxy()
      const driver = await open({ url: target.url(hole.port), queryTimeoutMs: 300, connectTimeoutMs: 5_000, poolSize: 1 })
      const widgets = uniqueNamespace('widgets')
      const key = uniqueNamespace('late')
      // Drop the connection and let the driver notice, then swallow the next connection's handshake.
      await hole.cut()
      await expectUnavailable(driver.get(widgets, 'late'))
      await expectUnavailable(driver.get(widgets, 'late'))
      await hole.restore()
      hole.blackhole()
      await expectUnavailable(driver.increment(key, 1, 60_000))
      // The client may still be connecting in the background; let that connection through.
      await hole.restore()
      expect(await eventually(() => driver.get(widgets, 'late'))).toBeNull()
      expect(await count('counters', 'counter_key = ?', [key])).toBe(0)
    })

    it('closes promptly even when the server stopped answering', async () => {
      const hole = await proxy()
      const driver = sqlStorage({ url: target.url(hole.port), schema: namespace, queryTimeoutMs: 500, connectTimeoutMs: 500 })
      const widgets = uniqueNamespace('widgets')
      await driver.create(widgets, { id: 'w1', data: {} })
      hole.blackhole()
      const pending = rejectionOf(driver.get(widgets, 'w1'))
      await boundedly(driver.close())
      expect(await pending).toMatchObject({ status: 503 })
      await expectUnavailable(driver.get(widgets, 'w1'), 'Storage is closed')
      await driver.close()
    })
  })
}
