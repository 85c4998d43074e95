import { randomUUID } from 'node:crypto'
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import calculateSlot from 'cluster-key-slot'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { isGatewayError } from '../../src/core/errors'
import { SETTLEMENT_MEMORY_MS, type StorageDriver } from '../../src/storage/contract'
import { redisStorage, type RedisStorageOptions } from '../../src/storage/redis'
import { describeStorageContract } from './contract'
import { describeGenerationLedger } from './generations'
import { describeAuditLog } from './audit-log'
import { describeStoredResponses } from './stored-responses'
import { describePresets } from './presets'

const REDIS_URL = 'redis://127.0.0.1:6379/0'
const START_REDIS =
  'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log'
/** Every key of this run starts with it; all are removed afterwards. */
const prefix = `modelgate-test:${randomUUID()}:`

let admin: Redis
const drivers: StorageDriver[] = []
const clients: Redis[] = []
const servers: Server[] = []

/** A driver on this run's prefix that is closed after the test even when an assertion fails first. */
const open = (options: Partial<RedisStorageOptions> = {}): StorageDriver => {
  const driver = redisStorage(options.client ? { prefix, ...options } : { url: REDIS_URL, prefix, ...options })
  drivers.push(driver)
  return driver
}

const openClient = (): Redis => {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 0 })
  clients.push(client)
  return client
}

beforeAll(async () => {
  admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  admin.on('error', () => {})
  try {
    await admin.connect()
    await admin.ping()
  } catch (error) {
    throw new Error(`Redis is not reachable at ${REDIS_URL}; start it with: ${START_REDIS}`, { cause: error })
  }
})

afterEach(async () => {
  await Promise.all(drivers.splice(0).map((driver) => driver.close()))
  await Promise.all(clients.splice(0).map((client) => client.quit().catch(() => client.disconnect())))
  await Promise.all(
    servers
      .splice(0)
      .map((server) => new Promise((resolve) => (server.listening ? server.close(resolve) : resolve(null)))),
  )
})

const keysOfRun = async (): Promise<string[]> => {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000)
    keys.push(...batch)
    cursor = next
  } while (cursor !== '0')
  return keys
}

afterAll(async () => {
  if (admin?.status !== 'ready') return
  const keys = await keysOfRun()
  for (let index = 0; index < keys.length; index += 500) await admin.unlink(...keys.slice(index, index + 500))
  await admin.quit()
})

const rejectionOf = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

const expectUnavailable = async (promise: Promise<unknown>, message = 'Storage is unavailable') => {
  const error = await rejectionOf(promise)
  expect(isGatewayError(error), `expected a GatewayError, got ${String(error)}`).toBe(true)
  expect(error).toMatchObject({ status: 503, name: 'StorageUnavailableError', message })
  return error as Error
}

const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  )

const unique = (label: string) => `${label}-${randomUUID().slice(0, 8)}`

/**
 * A loopback TCP proxy to Redis. `cut` drops every connection and stops accepting (connection refused);
 * `swallow` keeps connections open but discards their traffic; `restore` undoes either, on the same port.
 */
const startProxy = async () => {
  const upstream = new URL(REDIS_URL)
  const sockets = new Set<Socket>()
  let isSwallowing = false
  const server = createServer((incoming) => {
    const outgoing = connect(Number(upstream.port), upstream.hostname)
    const forward = (from: Socket, to: Socket) =>
      from.on('data', (chunk) => {
        if (!isSwallowing) to.write(chunk)
      })
    forward(incoming, outgoing)
    forward(outgoing, incoming)
    for (const socket of [incoming, outgoing]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => {
        sockets.delete(socket)
        incoming.destroy()
        outgoing.destroy()
      })
    }
  })
  servers.push(server)
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject)
        resolve((server.address() as AddressInfo).port)
      })
    })
  const dropConnections = () => {
    for (const socket of sockets) socket.destroy()
  }
  const port = await listen(0)
  return {
    url: `redis://127.0.0.1:${port}${upstream.pathname}`,
    async cut() {
      const closed = new Promise((resolve) => server.close(resolve))
      dropConnections()
      await closed
    },
    swallow() {
      isSwallowing = true
    },
    async restore() {
      if (isSwallowing) {
        isSwallowing = false
        return
      }
      await listen(port)
    },
  }
}

/** Polls a cheap call (bounded) until it succeeds; every failure on the way must be a 503. */
const waitForRecovery = async <T>(call: () => Promise<T>): Promise<T> => {
  const failures: unknown[] = []
  const value = await vi.waitFor(
    async () => {
      const outcome = await settle(call())
      if ('value' in outcome) return outcome.value
      failures.push(outcome.error)
      throw new Error('the driver did not recover within 15 s')
    },
    { timeout: 15_000, interval: 20 },
  )
  for (const error of failures) expect(error).toMatchObject({ status: 503 })
  return value
}

/** A Redis key part escaped as the driver escapes it. */
const escaped = (text: string) => text.replace(/[%:{}]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`)

interface ScriptCall {
  command: 'evalsha' | 'eval'
  keys: string[]
}

/**
 * A real client that records the KEYS of every script sent through it. With `isCluster` it poses as an ioredis
 * Cluster whose only primary is this server, so the driver takes its Cluster paths; `failDeletes` makes that many
 * DEL calls fail as a lost connection would.
 */
const recordingClient = (options: { isCluster?: boolean; failDeletes?: number } = {}) => {
  const client = openClient()
  const scripts: ScriptCall[] = []
  let deletesToFail = options.failDeletes ?? 0
  const proxy = new Proxy(client, {
    get(target, property) {
      if (property === 'evalsha' || property === 'eval') {
        return (script: string, count: number, ...rest: string[]) => {
          scripts.push({ command: property, keys: rest.slice(0, count) })
          return target[property](script, count, ...rest)
        }
      }
      if (options.isCluster && property === 'isCluster') return true
      if (options.isCluster && property === 'nodes') return () => [target]
      if (property === 'del' && deletesToFail > 0) {
        return async () => {
          deletesToFail--
          throw new Error('Connection is closed.')
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
  return { client: proxy, scripts }
}

/** The server's clock in Unix milliseconds. */
const serverNow = async () => {
  const [seconds, microseconds] = await admin.time()
  return Number(seconds) * 1_000 + Math.floor(Number(microseconds) / 1_000)
}

describeStorageContract('redis', () => redisStorage({ url: REDIS_URL, prefix }), {
  // Redis runs on this machine, so its clock is ours; the margin covers rounding to milliseconds.
  clockToleranceMs: 25,
})

describeGenerationLedger('redis', () => redisStorage({ url: REDIS_URL, prefix }))

describePresets('redis', () => redisStorage({ url: REDIS_URL, prefix }))
describeAuditLog('redis', () => redisStorage({ url: REDIS_URL, prefix }))
describeStoredResponses('redis', () => redisStorage({ url: REDIS_URL, prefix }))

describe('redisStorage', () => {
  describe('options', () => {
    it('rejects programmer errors with a TypeError and is named redis', async () => {
      const bad: unknown[] = [
        undefined,
        {},
        { url: REDIS_URL, client: openClient() },
        { url: 'http://127.0.0.1:6379' },
        { url: 'not a url' },
        { client: { status: 'ready' } },
        { url: REDIS_URL, prefix: 'a{b}:' },
        { url: REDIS_URL, prefix: 5 },
        { url: REDIS_URL, commandTimeoutMs: 0 },
        { url: REDIS_URL, commandTimeoutMs: 1.5 },
      ]
      for (const options of bad) expect(() => redisStorage(options as RedisStorageOptions)).toThrow(TypeError)
      expect(open().name).toBe('redis')
    })

    it('never puts the URL, which may hold a password, in an error', () => {
      expect(() => redisStorage({ url: 'http://user:s3cret@127.0.0.1' })).toThrow(/^(?!.*s3cret)/)
    })
  })

  describe('key layout', () => {
    it('keeps a collection in one hash slot and escapes ids, keys and values', async () => {
      const driver = open()
      const collection = unique('odd:{name}')
      const encoded = collection.replace(':', '%3A').replace('{', '%7B').replace('}', '%7D')
      const counter = unique('count:{x}')
      await driver.create(collection, {
        id: 'id:{1}%',
        data: { n: 1 },
        indexes: { 'co:lor': 're{d' },
        uniques: ['slug:a'],
        sortKey: 's',
      })
      await driver.increment(counter, 1, 60_000)

      const base = `${prefix}{${encoded}}:`
      const counterKey = `${prefix}{counter:${counter.replace(':', '%3A').replace('{', '%7B').replace('}', '%7D')}}`
      const keys = (await keysOfRun()).filter((key) => key.startsWith(base) || key === counterKey)
      expect(keys.sort()).toEqual(
        [`${base}r:id%3A%7B1%7D%25`, `${base}u:slug%3Aa`, `${base}all`, `${base}i:co%3Alor:re%7Bd`, counterKey].sort(),
      )
      const slot = calculateSlot(encoded)
      for (const key of keys.filter((key) => key.startsWith(base))) expect(calculateSlot(key)).toBe(slot)
      expect(calculateSlot(counterKey)).toBe(calculateSlot(counterKey.slice(prefix.length + 1, -1)))
    })

    it('stores the record once: one hash of its parts, and only ids and members elsewhere', async () => {
      const driver = open()
      const collection = unique('widgets')
      const data = { name: 'Widget', nested: [1, 'ü', null, { price: 12.5 }] }
      await driver.create(collection, {
        id: 'w1',
        data,
        indexes: { color: 'red' },
        uniques: ['slug:w1'],
        sortKey: '2024',
      })
      const base = `${prefix}{${collection}}:`
      expect(await admin.hgetall(`${base}r:w1`)).toEqual({
        id: 'w1',
        version: '1',
        sortKey: '2024',
        indexes: '{"color":"red"}',
        uniques: '["slug:w1"]',
        data: JSON.stringify(data),
      })
      expect(await admin.get(`${base}u:slug%3Aw1`)).toBe('w1')
      expect(await admin.zrange(`${base}all`, 0, -1, 'WITHSCORES')).toEqual(['2024\u0000w1', '0'])
      expect(await admin.zrange(`${base}i:color:red`, 0, -1)).toEqual(['2024\u0000w1'])

      await driver.delete(collection, 'w1')
      expect((await keysOfRun()).filter((key) => key.startsWith(base))).toEqual([])
    })

    it('round-trips control characters and escapes in unique keys and indexes', async () => {
      const driver = open()
      const collection = unique('widgets')
      const created = await driver.create(collection, {
        id: 'w\u0001"1',
        data: { text: '\u0000\n"\\ ✓ 😀' },
        indexes: { 'f\u0000': 'v\n"' },
        uniques: ['slug\u0000:"\\'],
      })
      expect(await driver.findByUnique(collection, 'slug\u0000:"\\')).toEqual(created)
      expect((await driver.list(collection, { where: { 'f\u0000': 'v\n"' } })).items).toEqual([created])
      expect(await driver.delete(collection, 'w\u0001"1', 1)).toBe(true)
      expect(await driver.findByUnique(collection, 'slug\u0000:"\\')).toBeNull()
    })

    it('refuses a sortKey holding U+0000 and text with lone surrogates', async () => {
      const driver = open()
      const collection = unique('widgets')
      await expect(driver.create(collection, { id: 'w1', data: {}, sortKey: 'a\u0000b' })).rejects.toThrow(TypeError)
      await expect(driver.create(collection, { id: 'w\uD800', data: {} })).rejects.toThrow(TypeError)
      await expect(driver.create(collection, { id: 'w1', data: {}, uniques: ['\uDC00'] })).rejects.toThrow(TypeError)
      await expect(driver.increment('\uD800', 1, 1_000)).rejects.toThrow(TypeError)
      expect(await driver.list(collection)).toEqual({ items: [], totalCount: 0 })
    })

    it('orders characters outside the BMP by code point (UTF-8 bytes), unlike UTF-16 code units', async () => {
      const driver = open()
      const collection = unique('widgets')
      await driver.create(collection, { id: 'astral', data: {}, sortKey: '\u{10000}' })
      await driver.create(collection, { id: 'bmp', data: {}, sortKey: '\uFFFF' })
      expect((await driver.list(collection)).items.map((item) => item.id)).toEqual(['bmp', 'astral'])
    })
  })

  describe('several processes on one prefix', () => {
    it('shares state between two connections', async () => {
      const [first, second] = [open(), open()]
      const collection = unique('widgets')
      const created = await first.create(collection, {
        id: 'w1',
        data: { n: 1 },
        uniques: ['slug:one'],
        indexes: { a: 'b' },
      })
      expect(await second.get(collection, 'w1')).toEqual(created)
      expect(await second.findByUnique(collection, 'slug:one')).toEqual(created)
      expect(await second.list(collection, { where: { a: 'b' } })).toEqual({ items: [created], totalCount: 1 })
      await expect(second.create(collection, { id: 'w2', data: {}, uniques: ['slug:one'] })).rejects.toMatchObject({
        status: 409,
        kind: 'unique',
      })
    })

    it('lets exactly one of two compare-and-set updates from the same version win', async () => {
      const [first, second] = [open(), open()]
      const collection = unique('widgets')
      await first.create(collection, { id: 'w1', data: {} })
      const outcomes = await Promise.all([
        settle(first.update(collection, 'w1', 1, { id: 'w1', data: { by: 'first' } })),
        settle(second.update(collection, 'w1', 1, { id: 'w1', data: { by: 'second' } })),
      ])
      const winners = outcomes.flatMap((outcome) => ('value' in outcome ? [outcome.value] : []))
      expect(winners).toHaveLength(1)
      const loser = outcomes.find((outcome) => 'error' in outcome) as { error: unknown }
      expect(loser.error).toMatchObject({ status: 409, kind: 'version' })
      expect(await second.get(collection, 'w1')).toEqual(winners[0])
    })

    it('lets exactly one of 20 parallel creates from two connections claim a unique key', async () => {
      const [first, second] = [open(), open()]
      const collection = unique('widgets')
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          settle((index % 2 ? first : second).create(collection, { id: `w${index}`, data: {}, uniques: ['slug:x'] })),
        ),
      )
      const winners = outcomes.flatMap((outcome) => ('value' in outcome ? [outcome.value] : []))
      expect(winners).toHaveLength(1)
      for (const outcome of outcomes) {
        if ('error' in outcome) expect(outcome.error).toMatchObject({ status: 409, kind: 'unique' })
      }
      expect((await first.list(collection)).totalCount).toBe(1)
    })

    it('adds up counters from two connections, all sharing one expiresAt', async () => {
      const [first, second] = [open(), open()]
      const key = unique('counter')
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, index) => (index % 2 ? first : second).increment(key, 1, 60_000)),
      )
      expect(results.map((result) => result.value).sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, index) => index + 1),
      )
      expect(new Set(results.map((result) => result.expiresAt)).size).toBe(1)
    })

    it('adds non-integer and negative amounts exactly as JavaScript numbers do', async () => {
      const driver = open()
      const key = unique('counter')
      expect((await driver.increment(key, 0.1, 60_000)).value).toBe(0.1)
      expect((await driver.increment(key, 0.2, 60_000)).value).toBe(0.1 + 0.2)
      expect((await driver.increment(key, -1e-20, 60_000)).value).toBe(0.1 + 0.2 - 1e-20)
      expect((await driver.increment(key, -1.5e300, 60_000)).value).toBe(0.1 + 0.2 - 1e-20 - 1.5e300)
    })
  })

  describe('tallies', () => {
    const DAY_MS = 86_400_000
    const tallyBase = (of = prefix) => `${of}{tally}:`
    /** A prefix of its own under this run's, for a store that has not been upgraded yet. */
    const freshPrefix = () => `${prefix}${unique('upgrade')}:`

    it('keeps every tally key, hold, lease and settled id in one slot, with ids and keys escaped', async () => {
      const driver = open()
      const key = unique('spend:odd{1}%')
      const id = unique('hold:{x}%')
      await driver.hold({ id, owner: 'process-a', leaseMs: 60_000, changes: [{ key, amount: 1.5, ttlMs: DAY_MS }] })
      const base = tallyBase()
      const tallyKey = `${base}t:${escaped(key)}`
      const holdKey = `${base}h:${escaped(id)}`
      expect(await admin.hgetall(holdKey)).toEqual({ owner: 'process-a', changes: JSON.stringify([{ key, amount: 1.5, ttlMs: DAY_MS }]) })
      const lease = Number(await admin.zscore(`${base}leases`, id))
      expect(lease).toBeGreaterThan(await serverNow())
      const tally = await admin.hgetall(tallyKey)
      expect(tally.value).toBe('1.5')
      // The tally expires in Redis at the instant it stores, so Redis sweeps it.
      expect(await admin.pexpiretime(tallyKey)).toBe(Number(tally.expiresAt))

      await driver.settle([{ id, changes: [{ key, amount: 0.25, ttlMs: DAY_MS }] }])
      expect(await admin.exists(holdKey)).toBe(0)
      expect(await admin.zscore(`${base}leases`, id)).toBeNull()
      const settledKey = `${base}s:${escaped(id)}`
      expect(await admin.pttl(settledKey)).toBeGreaterThan(SETTLEMENT_MEMORY_MS - 60_000)
      expect(await admin.pttl(settledKey)).toBeLessThanOrEqual(SETTLEMENT_MEMORY_MS)
      expect(await admin.hget(tallyKey, 'value')).toBe('0.25')

      const keys = (await keysOfRun()).filter((name) => name.startsWith(base))
      expect(keys).toEqual(expect.arrayContaining([tallyKey, `${base}leases`, settledKey, `${base}upgraded`]))
      for (const name of keys) expect(calculateSlot(name)).toBe(calculateSlot('tally'))
    })

    it('sends every tally script with keys of one slot, and a settle batch as one script call', async () => {
      const { client, scripts } = recordingClient()
      const driver = open({ client })
      const key = (label: string) => unique(`spend:k:${label}`)
      const [shared, other] = [key('shared'), key('other')]
      await driver.readTallies([shared])
      scripts.splice(0)

      const ids = Array.from({ length: 50 }, (_, index) => unique(`h${index}`))
      for (const id of ids.slice(0, 25)) await driver.hold({ id, owner: 'a', leaseMs: 60_000, changes: [{ key: shared, amount: 10, ttlMs: DAY_MS }] })
      expect(await driver.renewHolds(ids, 60_000)).toBe(25)
      await driver.releaseExpiredHolds(10)
      const before = scripts.length
      await driver.settle(ids.map((id) => ({ id, changes: [{ key: shared, amount: 1, ttlMs: DAY_MS }, { key: other, amount: 2, ttlMs: DAY_MS }] })))
      expect(scripts.slice(before).filter((call) => call.command === 'evalsha')).toHaveLength(1)
      expect(await driver.readTallies([shared, other])).toEqual([50, 100])

      // A batch past 100 settlements is split (each settlement stays atomic on its own) and still adds up exactly.
      const many = Array.from({ length: 150 }, (_, index) => ({ id: unique(`s${index}`), changes: [{ key: shared, amount: 1, ttlMs: DAY_MS }] }))
      const beforeMany = scripts.length
      await driver.settle(many)
      expect(scripts.slice(beforeMany).filter((call) => call.command === 'evalsha')).toHaveLength(2)
      await driver.settle(many)
      expect(await driver.readTallies([shared])).toEqual([200])

      expect(scripts.length).toBeGreaterThan(0)
      for (const call of scripts) {
        const slots = new Set(call.keys.map((name) => calculateSlot(name)))
        expect([...slots], call.keys.join(' ')).toEqual([calculateSlot('tally')])
      }
    })

    it('reads a tally Redis has not evicted yet as expired once its expiresAt has passed, and starts it again', async () => {
      const driver = open()
      const key = unique('spend:k:stale')
      await driver.readTallies([key])
      // As Redis may leave it for a moment after its instant: the stored expiresAt is what counts.
      await admin.hset(`${tallyBase()}t:${escaped(key)}`, 'value', '500', 'expiresAt', String((await serverNow()) - 1_000))
      expect(await driver.readTallies([key])).toEqual([0])
      const [held] = await driver.hold({ id: unique('h'), owner: 'a', leaseMs: 60_000, changes: [{ key, amount: 7, ttlMs: DAY_MS }] })
      expect(held!.value).toBe(7)
      expect(held!.expiresAt).toBeGreaterThan((await serverNow()) + DAY_MS - 60_000)
    })

    it('gives back what a hold added under a key with control characters, quotes and characters outside the BMP', async () => {
      const driver = open()
      const key = unique('spend:\u0000"\\ ✓ 😀\n')
      const id = unique('h\u0001"')
      await driver.hold({ id, owner: 'a', leaseMs: 60_000, changes: [{ key, amount: 0.1 + 0.2, ttlMs: DAY_MS }] })
      expect(await driver.readTallies([key])).toEqual([0.1 + 0.2])
      await driver.settle([{ id, changes: [{ key, amount: 1e-9, ttlMs: DAY_MS }] }])
      // Exactly what the hold added came back: 0.1 + 0.2 - (0.1 + 0.2) + 1e-9, to the last bit.
      expect(await driver.readTallies([key])).toEqual([0.1 + 0.2 - (0.1 + 0.2) + 1e-9])
    })

    it('runs its tally scripts again after the server lost its script cache', async () => {
      const driver = open()
      const key = unique('spend:k:flush')
      const id = unique('h')
      await driver.hold({ id, owner: 'a', leaseMs: 60_000, changes: [{ key, amount: 3, ttlMs: DAY_MS }] })
      await admin.script('FLUSH')
      await driver.settle([{ id, changes: [{ key, amount: 1, ttlMs: DAY_MS }] }])
      expect(await driver.readTallies([key])).toEqual([1])
    })

    describe('upgrade from spend counters', () => {
      /** Writes what an older version kept: spend in ordinary counters, through the driver's own increment. */
      const writeOldCounters = async (at: string) => {
        const old = open({ prefix: at })
        const keys = { daily: unique('spend:key:abc:usage:d2025-03-14'), total: unique('spend:account:a1:usage:total'), other: unique('rate:key:abc') }
        await old.increment(keys.daily, 1_000, 2 * DAY_MS)
        await old.increment(keys.daily, 234, 2 * DAY_MS)
        await old.increment(keys.total, 5_000, 100 * DAY_MS)
        await old.increment(keys.other, 9, 60_000)
        return keys
      }
      const oldCounterKey = (at: string, key: string) => `${at}{counter:${escaped(key)}}`

      it('carries each old spend counter into the tally of its key once, keeping its expiry, on a standalone server', async () => {
        const at = freshPrefix()
        const keys = await writeOldCounters(at)
        const daily = await admin.hgetall(oldCounterKey(at, keys.daily))
        // An old counter past its expiresAt that Redis has not evicted yet carries nothing.
        const stale = unique('spend:key:abc:usage:d2025-03-13')
        await admin.hset(oldCounterKey(at, stale), 'value', '77', 'expiresAt', String((await serverNow()) - 1_000))
        // A tally already there (made by another process while this one upgrades) keeps its value too, and the earlier expiry wins.
        await admin.hset(`${tallyBase(at)}t:${escaped(keys.total)}`, 'value', '40', 'expiresAt', String((await serverNow()) + 200 * DAY_MS))

        // Three processes upgrade at once: each counter moves once.
        const drivers = [open({ prefix: at }), open({ prefix: at }), open({ prefix: at })]
        const reads = await Promise.all(drivers.map((driver) => driver.readTallies([keys.daily, keys.total, stale, keys.other])))
        for (const values of reads) expect(values).toEqual([1_234, 5_040, 0, 0])

        expect(await admin.hgetall(`${tallyBase(at)}t:${escaped(keys.daily)}`)).toEqual({ value: '1234', expiresAt: daily.expiresAt })
        const total = await admin.hgetall(`${tallyBase(at)}t:${escaped(keys.total)}`)
        expect(Number(total.expiresAt)).toBeLessThan((await serverNow()) + 101 * DAY_MS)
        expect(await admin.pexpiretime(`${tallyBase(at)}t:${escaped(keys.total)}`)).toBe(Number(total.expiresAt))
        for (const key of [keys.daily, keys.total, stale]) expect(await admin.exists(oldCounterKey(at, key))).toBe(0)
        // Counters that never held spend stay counters.
        expect((await drivers[0]!.increment(keys.other, 0, 60_000)).value).toBe(9)
        expect(await admin.get(`${tallyBase(at)}upgraded`)).toBe('1')

        // Once upgraded, a spend counter written afterwards (an old process still running) is not carried again.
        await drivers[0]!.increment(keys.daily, 1, 60_000)
        expect(await open({ prefix: at }).readTallies([keys.daily])).toEqual([1_234])
      })

      it('on a Cluster, adds each old counter once through a marker in the tally slot, even when its delete failed', async () => {
        const at = freshPrefix()
        const keys = await writeOldCounters(at)
        const { client, scripts } = recordingClient({ isCluster: true, failDeletes: 1 })
        const driver = open({ client, prefix: at })
        // The first delete fails as a lost connection would: the call fails, and the counter it had added stays added once.
        await expectUnavailable(driver.readTallies([keys.daily]))
        expect(await admin.get(`${tallyBase(at)}upgraded`)).toBeNull()
        expect(await driver.readTallies([keys.daily, keys.total, keys.other])).toEqual([1_234, 5_000, 0])
        expect(await open({ prefix: at }).readTallies([keys.daily, keys.total])).toEqual([1_234, 5_000])
        for (const key of [keys.daily, keys.total]) {
          expect(await admin.exists(oldCounterKey(at, key))).toBe(0)
          expect(await admin.pttl(`${tallyBase(at)}m:${escaped(key)}`)).toBeGreaterThan(0)
        }
        // Every script stayed in the tally slot: the old counters were only read and deleted, one key per command.
        expect(scripts.length).toBeGreaterThan(0)
        for (const call of scripts) expect(new Set(call.keys.map((name) => calculateSlot(name)))).toEqual(new Set([calculateSlot('tally')]))
      })
    })
  })

  describe('failures', () => {
    it('fails fast with StorageUnavailableError when Redis is unreachable, leaking no key', async () => {
      const driver = open({ url: 'redis://127.0.0.1:1', commandTimeoutMs: 300 })
      const collection = unique('widgets')
      const calls: Array<Promise<unknown>> = [
        driver.create(collection, { id: 'w1', data: {} }),
        driver.get(collection, 'w1'),
        driver.findByUnique(collection, 'slug'),
        driver.update(collection, 'w1', 1, { id: 'w1', data: {} }),
        driver.delete(collection, 'w1'),
        driver.list(collection),
        driver.increment(unique('counter'), 1, 1_000),
        driver.hold({ id: unique('h'), owner: 'a', leaseMs: 1_000, changes: [{ key: unique('spend:k'), amount: 1, ttlMs: 1_000 }] }),
        driver.settle([{ id: unique('h'), changes: [{ key: unique('spend:k'), amount: 1, ttlMs: 1_000 }] }]),
        driver.renewHolds([unique('h')], 1_000),
        driver.releaseExpiredHolds(10),
        driver.readTallies([unique('spend:k')]),
      ]
      for (const call of calls) {
        const error = await expectUnavailable(call)
        expect(error.cause).toBeInstanceOf(Error)
        expect(JSON.stringify({ message: error.message, cause: String(error.cause) })).not.toContain(collection)
      }
    })

    it('rejects with StorageUnavailableError when the server accepts connections but never answers', async () => {
      const silent = createServer((socket) => socket.on('error', () => {}))
      const sockets = new Set<Socket>()
      silent.on('connection', (socket) => sockets.add(socket))
      servers.push(silent)
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
      const port = (silent.address() as AddressInfo).port
      const driver = open({ url: `redis://127.0.0.1:${port}`, commandTimeoutMs: 200 })
      await expectUnavailable(driver.get(unique('widgets'), 'w1'))
      await expectUnavailable(driver.increment(unique('counter'), 1, 1_000))
      await driver.close()
      for (const socket of sockets) socket.destroy()
    })

    it('rejects while a proxy to Redis is cut and serves again once it is back, on the same driver', async () => {
      const proxy = await startProxy()
      const driver = open({ url: proxy.url, commandTimeoutMs: 500 })
      const collection = unique('widgets')
      const created = await driver.create(collection, { id: 'w1', data: { kept: true } })

      await proxy.cut()
      await expectUnavailable(driver.get(collection, 'w1'))
      await expectUnavailable(driver.increment(unique('counter'), 1, 1_000))

      await proxy.restore()
      expect(await waitForRecovery(() => driver.get(collection, 'w1'))).toEqual(created)
      expect((await driver.update(collection, 'w1', 1, { id: 'w1', data: {} }))?.version).toBe(2)
    })

    it('rejects while traffic is swallowed and serves again afterwards, on a fresh connection', async () => {
      const proxy = await startProxy()
      const driver = open({ url: proxy.url, commandTimeoutMs: 300 })
      const collection = unique('widgets')
      const created = await driver.create(collection, { id: 'w1', data: {} })

      proxy.swallow()
      const [read, write] = await Promise.all([
        settle(driver.get(collection, 'w1')),
        settle(driver.create(collection, { id: 'w2', data: {} })),
      ])
      for (const outcome of [read, write]) expect(outcome).toMatchObject({ error: { status: 503 } })

      // The swallowed bytes are gone for good, so an old connection could never pair replies again.
      await proxy.restore()
      expect(await waitForRecovery(() => driver.get(collection, 'w1'))).toEqual(created)
      const lost = await driver.get(collection, 'w2')
      expect(lost === null || lost.version === 1).toBe(true)
      expect((await driver.create(collection, { id: 'w3', data: {} })).version).toBe(1)
    })

    it('rejects holds and settlements while a proxy to Redis is cut, and settles each id once after it is back', async () => {
      const proxy = await startProxy()
      const driver = open({ url: proxy.url, commandTimeoutMs: 500 })
      const key = unique('spend:k:outage')
      const change = (amount: number) => ({ key, amount, ttlMs: 86_400_000 })
      const [first, second] = [unique('h1'), unique('h2')]
      await driver.hold({ id: first, owner: 'a', leaseMs: 60_000, changes: [change(1_000)] })

      await proxy.cut()
      await expectUnavailable(driver.hold({ id: second, owner: 'a', leaseMs: 60_000, changes: [change(1_000)] }))
      await expectUnavailable(driver.settle([{ id: first, changes: [change(300)] }]))
      await expectUnavailable(driver.renewHolds([first], 60_000))
      await expectUnavailable(driver.releaseExpiredHolds(10))
      await expectUnavailable(driver.readTallies([key]))

      await proxy.restore()
      expect(await waitForRecovery(() => driver.readTallies([key]))).toEqual([1_000])
      // The settlement is sent again, twice: it lands once.
      await driver.settle([{ id: first, changes: [change(300)] }])
      await driver.settle([{ id: first, changes: [change(300)] }])
      expect(await driver.readTallies([key])).toEqual([300])
    })

    it('keeps a hold whose answer was swallowed whole or absent, and a retried settlement lands once', async () => {
      const proxy = await startProxy()
      const driver = open({ url: proxy.url, commandTimeoutMs: 300 })
      const key = unique('spend:k:swallowed')
      const change = (amount: number) => ({ key, amount, ttlMs: 86_400_000 })
      const id = unique('h')
      await driver.readTallies([key])

      proxy.swallow()
      await expectUnavailable(driver.hold({ id, owner: 'a', leaseMs: 60_000, changes: [change(1_000)] }))
      await proxy.restore()
      const [held] = await waitForRecovery(() => driver.readTallies([key]))
      // The hold either ran completely or not at all.
      expect([0, 1_000]).toContain(held)
      await driver.settle([{ id, changes: [change(250)] }])
      await driver.settle([{ id, changes: [change(250)] }])
      expect(await driver.readTallies([key])).toEqual([250])
    })

    it('runs its scripts again after the server lost its script cache', async () => {
      const driver = open()
      const collection = unique('widgets')
      await driver.create(collection, { id: 'w1', data: {} })
      await admin.script('FLUSH')
      expect((await driver.update(collection, 'w1', 1, { id: 'w1', data: {} }))?.version).toBe(2)
      expect(await driver.findByUnique(collection, 'none')).toBeNull()
    })
  })

  describe('a client passed in', () => {
    it('is used but never quit by close()', async () => {
      const client = openClient()
      const driver = redisStorage({ client, prefix })
      const collection = unique('widgets')
      await driver.create(collection, { id: 'w1', data: {} })
      await driver.close()
      await expectUnavailable(driver.get(collection, 'w1'), 'Storage is closed')
      await expectUnavailable(driver.settle([]), 'Storage is closed')
      await expectUnavailable(driver.readTallies([]), 'Storage is closed')
      expect(await client.ping()).toBe('PONG')
      expect(await client.exists(`${prefix}{${collection}}:r:w1`)).toBe(1)
    })

    it('turns a client that is already closed into StorageUnavailableError, and closes quietly', async () => {
      const client = openClient()
      await client.quit()
      const driver = redisStorage({ client, prefix })
      await expectUnavailable(driver.get(unique('widgets'), 'w1'))
      await driver.close()
      await driver.close()
    })
  })
})
