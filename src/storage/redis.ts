/**
 * The Redis driver. Every write is one Lua script, so each check and its write happen in one
 * atomic step on the server, whatever number of gateway processes share the store.
 *
 * Key layout (`<c>` is the encoded collection, inside a hash tag so a collection lives in one
 * Redis Cluster slot and every script touches a single slot):
 *   `<prefix>{<c>}:r:<id>`            hash: id, version, sortKey, indexes (JSON), uniques (JSON), data (JSON)
 *   `<prefix>{<c>}:u:<uniqueKey>`     string: id of the record holding the key
 *   `<prefix>{<c>}:all`               sorted set of `<sortKey>\0<id>`, all scores 0
 *   `<prefix>{<c>}:i:<field>:<value>` sorted set of the same members, one per index value
 *   `<prefix>{counter:<key>}`         hash: value, expiresAt (absolute, from the server's clock)
 * Tallies, holds and settled ids share one slot (src/storage/redis-tallies.ts has the details and the upgrade):
 *   `<prefix>{tally}:t:<key>`         hash: value, expiresAt, as a counter's
 *   `<prefix>{tally}:h:<id>`          hash: owner, changes (JSON)
 *   `<prefix>{tally}:leases`          sorted set of hold ids, scored by the end of their lease
 *   `<prefix>{tally}:s:<id>`          string: the id was settled (expires after SETTLEMENT_MEMORY_MS)
 *   `<prefix>{tally}:upgraded`        string: old `spend:` counters were carried into tallies
 *   `<prefix>{tally}:m:<key>`         string, Cluster only: this old counter was carried over
 * Every part after the prefix escapes `%`, `:`, `{` and `}` as `%XX`, so no id or key can reach
 * into another's name or break the hash tag.
 */
import { Redis, type Cluster } from 'ioredis'
import { withDeadline } from '../core/deadline'
import { StorageConflictError, StorageUnavailableError } from '../core/errors'
import type {
  CounterResult,
  JsonObject,
  ListQuery,
  ListResult,
  RecordInput,
  StorageDriver,
  StoredRecord,
} from './contract'
import { checkedDriver } from './checked'
import {
  LUA_ENCODE,
  LUA_FORMAT_NUMBER,
  LUA_NOW,
  assertKeyText,
  defineScript,
  encodeKeyPart,
  hasLoneSurrogate,
  parseLuaNumber,
  type Script,
} from './redis-lua'
import { createRedisTallies, type TallyClient } from './redis-tallies'
import { toStoredRecord } from './validate'

export interface RedisStorageOptions {
  /**
   * An ioredis `Redis` or `Cluster` instance to use instead of `url`. The caller owns it: its own
   * retry and queue options apply and `close()` leaves it connected.
   */
  client?: Redis | Cluster
  /**
   * Where to connect when no `client` is given (`redis://[:password@]host:6379/0`, `rediss://` for TLS);
   * the driver owns this connection. May hold a password: never log it.
   */
  url?: string
  /** Start of every key (default `modelgate:`), so several gateways or test runs can share one server. */
  prefix?: string
  /** Longest wait for one call in milliseconds (default 2000); then it rejects with `StorageUnavailableError`. */
  commandTimeoutMs?: number
}

const DEFAULT_PREFIX = 'modelgate:'
const DEFAULT_COMMAND_TIMEOUT_MS = 2_000
/** Reconnect forever, backing off to at most this long between attempts, so the store heals by itself. */
const MAX_RECONNECT_DELAY_MS = 1_000
/** A connection in one of these states has failed and is waiting to reconnect: calls fail at once. */
const DOWN_STATUSES = new Set(['reconnecting', 'disconnecting', 'close', 'end'])
const RECORD_FIELDS = ['id', 'version', 'sortKey', 'indexes', 'uniques', 'data'] as const

/** The part of an ioredis `Redis` or `Cluster` this driver uses. */
interface RedisClient extends TallyClient {
  readonly status: string
  evalsha(sha: string, numberOfKeys: number, ...args: string[]): Promise<unknown>
  eval(script: string, numberOfKeys: number, ...args: string[]): Promise<unknown>
  hmget(key: string, ...fields: string[]): Promise<Array<string | null>>
  quit(): Promise<unknown>
  disconnect(reconnect?: boolean): void
  on(event: 'error', listener: (error: unknown) => void): unknown
}

const isRedisClient = (value: unknown): boolean =>
  typeof value === 'object' &&
  value !== null &&
  ['evalsha', 'eval', 'hmget', 'get', 'set', 'del', 'scan', 'quit', 'disconnect'].every(
    (method) => typeof (value as Record<string, unknown>)[method] === 'function',
  ) &&
  typeof (value as { status?: unknown }).status === 'string'

const isRedisUrl = (value: unknown): boolean => {
  if (typeof value !== 'string') return false
  try {
    const protocol = new URL(value).protocol
    return protocol === 'redis:' || protocol === 'rediss:'
  } catch {
    return false
  }
}

interface ResolvedOptions {
  client: RedisClient
  ownsClient: boolean
  /** Why the owned connection last failed (refused, DNS, TLS, auth), until it is ready again: the cause worth naming. */
  lastConnectionError: () => Error | undefined
  prefix: string
  commandTimeoutMs: number
}

const resolveOptions = (options: RedisStorageOptions): ResolvedOptions => {
  if (typeof options !== 'object' || options === null) throw new TypeError('redisStorage: options must be an object')
  const { client, url } = options
  if (client !== undefined && url !== undefined) {
    throw new TypeError('redisStorage: pass options.client or options.url, not both')
  }
  if (client === undefined && url === undefined)
    throw new TypeError('redisStorage: options.client or options.url is required')
  if (client !== undefined && !isRedisClient(client)) {
    throw new TypeError('redisStorage: options.client must be an ioredis Redis or Cluster instance')
  }
  // Never echo the URL: it may carry a password.
  if (url !== undefined && !isRedisUrl(url))
    throw new TypeError('redisStorage: options.url must be a redis:// or rediss:// URL')
  const prefix = options.prefix ?? DEFAULT_PREFIX
  if (typeof prefix !== 'string' || /[{}]/.test(prefix) || hasLoneSurrogate(prefix)) {
    // A brace in the prefix would become the hash tag and put every key in one Cluster slot.
    throw new TypeError('redisStorage: options.prefix must be a string without { or }')
  }
  const commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
  if (!Number.isSafeInteger(commandTimeoutMs) || commandTimeoutMs < 1) {
    throw new TypeError('redisStorage: options.commandTimeoutMs must be a positive integer')
  }
  if (client !== undefined)
    return { client: client as unknown as RedisClient, ownsClient: false, prefix, commandTimeoutMs, lastConnectionError: () => undefined }

  const owned = new Redis(url as string, {
    // Bounds commands queued while a connection attempt is under way, and commands the server never answers.
    commandTimeout: commandTimeoutMs,
    connectTimeout: commandTimeoutMs,
    // Fail queued commands as soon as one connection attempt fails, instead of after 20 attempts.
    maxRetriesPerRequest: 0,
    // A write whose reply was lost may have run; sending it again could, say, count a request twice.
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt: number) => Math.min(attempt * 50, MAX_RECONNECT_DELAY_MS),
  })
  // Failures reach callers as rejected calls; without a listener ioredis would print each one.
  let lastConnectionError: Error | undefined
  owned.on('error', (error: Error) => (lastConnectionError = error))
  owned.on('ready', () => (lastConnectionError = undefined))
  return { client: owned as unknown as RedisClient, ownsClient: true, prefix, commandTimeoutMs, lastConnectionError: () => lastConnectionError }
}

// Scripts receive one key, `<base>all`, so Redis Cluster routes them to the collection's slot;
// the other keys they touch share its hash tag. They are kept as `String.raw` so `\0` reaches Lua as written.
const LUA_PRELUDE = LUA_ENCODE + String.raw`
local base = string.sub(KEYS[1], 1, -4)
local function indexKeys(indexesJson)
  local keys = { base .. 'all' }
  for field, value in pairs(cjson.decode(indexesJson)) do
    keys[#keys + 1] = base .. 'i:' .. enc(field) .. ':' .. enc(value)
  end
  return keys
end
local function freeUniques(uniquesJson, id)
  for _, key in ipairs(cjson.decode(uniquesJson)) do
    local uniqueKey = base .. 'u:' .. enc(key)
    if redis.call('GET', uniqueKey) == id then redis.call('DEL', uniqueKey) end
  end
end
local function claimUniques(uniquesJson, id)
  for _, key in ipairs(cjson.decode(uniquesJson)) do redis.call('SET', base .. 'u:' .. enc(key), id) end
end
local function isAnyUniqueHeld(uniquesJson, id)
  for _, key in ipairs(cjson.decode(uniquesJson)) do
    local holder = redis.call('GET', base .. 'u:' .. enc(key))
    if holder and holder ~= id then return true end
  end
  return false
end
`

// ARGV: id, sortKey, indexes, uniques, data. Returns 1, or 0 when the id or a unique key is taken.
const CREATE = String.raw`
local id, sortKey, indexes, uniques = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local recordKey = base .. 'r:' .. enc(id)
if redis.call('EXISTS', recordKey) == 1 or isAnyUniqueHeld(uniques, id) then return 0 end
redis.call('HSET', recordKey, 'id', id, 'version', '1', 'sortKey', sortKey, 'indexes', indexes, 'uniques', uniques, 'data', ARGV[5])
claimUniques(uniques, id)
for _, key in ipairs(indexKeys(indexes)) do redis.call('ZADD', key, 0, sortKey .. '\0' .. id) end
return 1
`

// ARGV: groups of (id, sortKey, indexes, uniques, data), one per record. Returns one 1 or 0 per record, as CREATE
// does; records earlier in the batch count as taken for later ones.
const CREATE_MANY = String.raw`
local created = {}
for first = 1, #ARGV, 5 do
  local id, sortKey, indexes, uniques = ARGV[first], ARGV[first + 1], ARGV[first + 2], ARGV[first + 3]
  local recordKey = base .. 'r:' .. enc(id)
  if redis.call('EXISTS', recordKey) == 1 or isAnyUniqueHeld(uniques, id) then
    created[#created + 1] = 0
  else
    redis.call('HSET', recordKey, 'id', id, 'version', '1', 'sortKey', sortKey, 'indexes', indexes, 'uniques', uniques, 'data', ARGV[first + 4])
    claimUniques(uniques, id)
    for _, key in ipairs(indexKeys(indexes)) do redis.call('ZADD', key, 0, sortKey .. '\0' .. id) end
    created[#created + 1] = 1
  end
end
return created
`

// ARGV: id, expectedVersion, newVersion, sortKey, indexes, uniques, data.
// Returns 1, 0 when absent, -1 on a version conflict, -2 on a unique conflict (version is checked first, as in memory).
const UPDATE = String.raw`
local id, sortKey, indexes, uniques = ARGV[1], ARGV[4], ARGV[5], ARGV[6]
local recordKey = base .. 'r:' .. enc(id)
local current = redis.call('HMGET', recordKey, 'version', 'sortKey', 'indexes', 'uniques')
if not current[1] then return 0 end
if current[1] ~= ARGV[2] then return -1 end
if isAnyUniqueHeld(uniques, id) then return -2 end
freeUniques(current[4], id)
for _, key in ipairs(indexKeys(current[3])) do redis.call('ZREM', key, current[2] .. '\0' .. id) end
redis.call('HSET', recordKey, 'version', ARGV[3], 'sortKey', sortKey, 'indexes', indexes, 'uniques', uniques, 'data', ARGV[7])
claimUniques(uniques, id)
for _, key in ipairs(indexKeys(indexes)) do redis.call('ZADD', key, 0, sortKey .. '\0' .. id) end
return 1
`

// ARGV: id, expectedVersion ('' for none). Returns 1, 0 when absent, -1 on a version conflict.
const DELETE = String.raw`
local id = ARGV[1]
local recordKey = base .. 'r:' .. enc(id)
local current = redis.call('HMGET', recordKey, 'version', 'sortKey', 'indexes', 'uniques')
if not current[1] then return 0 end
if ARGV[2] ~= '' and current[1] ~= ARGV[2] then return -1 end
freeUniques(current[4], id)
for _, key in ipairs(indexKeys(current[3])) do redis.call('ZREM', key, current[2] .. '\0' .. id) end
redis.call('DEL', recordKey)
return 1
`

const FIELD_LIST = RECORD_FIELDS.map((field) => `'${field}'`).join(', ')

// ARGV: uniqueKey. Returns the holder's fields, or nil.
const FIND_BY_UNIQUE = String.raw`
local id = redis.call('GET', base .. 'u:' .. enc(ARGV[1]))
if not id then return false end
return redis.call('HMGET', base .. 'r:' .. enc(id), ${FIELD_LIST})
`

// ARGV: offset, limit (-1 for all), then the field/value pairs of `where`.
// Returns { totalCount, fields of each item... }. Walks the smallest matching sorted set in order
// and checks membership in the others, so the cost follows the most selective filter.
const LIST = String.raw`
local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local sets = {}
for i = 3, #ARGV, 2 do sets[#sets + 1] = base .. 'i:' .. enc(ARGV[i]) .. ':' .. enc(ARGV[i + 1]) end
if #sets == 0 then sets[1] = base .. 'all' end
local smallest, smallestSize = 1, nil
for i, key in ipairs(sets) do
  local size = redis.call('ZCARD', key)
  if smallestSize == nil or size < smallestSize then smallest, smallestSize = i, size end
end
local members, total = {}, 0
if #sets == 1 then
  total = smallestSize
  if limit ~= 0 and offset < total then
    members = redis.call('ZRANGEBYLEX', sets[1], '-', '+', 'LIMIT', offset, limit)
  end
elseif smallestSize > 0 then
  local cursor = '-'
  while true do
    local chunk = redis.call('ZRANGEBYLEX', sets[smallest], cursor, '+', 'LIMIT', 0, 500)
    for _, member in ipairs(chunk) do
      local isMatch = true
      for i, key in ipairs(sets) do
        if i ~= smallest and not redis.call('ZSCORE', key, member) then isMatch = false break end
      end
      if isMatch then
        if total >= offset and (limit < 0 or #members < limit) then members[#members + 1] = member end
        total = total + 1
      end
    end
    if #chunk < 500 then break end
    cursor = '(' .. chunk[#chunk]
  end
end
local result = { total }
for _, member in ipairs(members) do
  local id = string.sub(member, string.find(member, '\0', 1, true) + 1)
  local fields = redis.call('HMGET', base .. 'r:' .. enc(id), ${FIELD_LIST})
  for _, field in ipairs(fields) do result[#result + 1] = field end
end
return result
`

// KEYS[1]: the counter. ARGV: amount, ttlMs. Returns { value, expiresAt } as strings.
// Time comes from the server, so every process sees the same window and the same expiresAt.
const INCREMENT = LUA_FORMAT_NUMBER + LUA_NOW + String.raw`
local current = redis.call('HMGET', KEYS[1], 'value', 'expiresAt')
if current[2] and tonumber(current[2]) > now then
  local value = formatNumber(tonumber(current[1]) + tonumber(ARGV[1]))
  redis.call('HSET', KEYS[1], 'value', value)
  return { value, current[2] }
end
local value = formatNumber(tonumber(ARGV[1]))
local expiresAt = string.format('%.0f', now + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'value', value, 'expiresAt', expiresAt)
redis.call('PEXPIREAT', KEYS[1], expiresAt)
return { value, expiresAt }
`

const SCRIPTS = {
  create: defineScript(LUA_PRELUDE + CREATE),
  createMany: defineScript(LUA_PRELUDE + CREATE_MANY),
  update: defineScript(LUA_PRELUDE + UPDATE),
  delete: defineScript(LUA_PRELUDE + DELETE),
  findByUnique: defineScript(LUA_PRELUDE + FIND_BY_UNIQUE),
  list: defineScript(LUA_PRELUDE + LIST),
  increment: defineScript(INCREMENT),
}

/** Builds a record from `RECORD_FIELDS` as read from Redis; `null` for a record that is gone. */
const toRecord = <T extends JsonObject>(fields: ReadonlyArray<string | null>): StoredRecord<T> | null => {
  const [id, version, sortKey, indexes, uniques, data] = fields
  if (id == null || version == null || sortKey == null || indexes == null || uniques == null || data == null)
    return null
  return {
    id,
    data: JSON.parse(data) as T,
    version: Number(version),
    indexes: JSON.parse(indexes) as Record<string, string>,
    uniques: JSON.parse(uniques) as string[],
    sortKey,
  }
}

/** Checks what the front door (src/storage/checked.ts) does not: text Redis cannot hold faithfully, and `\0` in a sortKey. */
const assertRecordText = (record: StoredRecord): void => {
  assertKeyText(record.id, 'id')
  for (const key of record.uniques) assertKeyText(key, 'input.uniques')
  for (const [field, value] of Object.entries(record.indexes)) {
    assertKeyText(field, 'input.indexes')
    assertKeyText(value, 'input.indexes')
  }
  assertKeyText(record.sortKey, 'input.sortKey')
  // Sorted-set members are `<sortKey>\0<id>`; a NUL inside the sortKey would misorder them.
  if (record.sortKey.includes('\0')) throw new TypeError('modelgate storage: input.sortKey must not contain U+0000')
}

const TIMEOUT_CODE = 'MODELGATE_REDIS_TIMEOUT'
const timeoutError = () => Object.assign(new Error('Redis did not answer in time'), { code: TIMEOUT_CODE })
/** Our own timer, or ioredis's `commandTimeout`. */
const isTimeout = (error: unknown): boolean =>
  error instanceof Error &&
  ((error as { code?: unknown }).code === TIMEOUT_CODE || error.message === 'Command timed out')

const unavailable = (cause: unknown) => {
  // ioredis attaches the failed command with all its arguments (keys, record JSON); keep those out of logs.
  if (typeof cause === 'object' && cause !== null && 'command' in cause) delete (cause as { command?: unknown }).command
  return new StorageUnavailableError('Storage is unavailable', { cause })
}

/**
 * A driver on Redis (5 or newer) or Redis Cluster, for several gateway processes sharing one state.
 * Every write is one atomic Lua script. When Redis is down or silent, calls reject within
 * `commandTimeoutMs` with `StorageUnavailableError` (a write that timed out may still have happened);
 * an owned connection reconnects by itself. Listing orders by UTF-8 bytes, which equals the
 * contract's UTF-16 order except for characters outside the BMP. Run Redis with `maxmemory-policy noeviction`:
 * an evicted unique key or index entry would break the invariants.
 *
 * @example
 * const gateway = createGateway({ storage: redisStorage({ url: process.env.REDIS_URL }) })
 */
export const redisStorage = (options: RedisStorageOptions): StorageDriver => {
  const { client, ownsClient, prefix, commandTimeoutMs, lastConnectionError } = resolveOptions(options)
  // A queued command only learns that the connection failed, not why; the connection's own error says why.
  const withConnectionError = (error: unknown): unknown => {
    const connectionError = lastConnectionError()
    if (!connectionError || !(error instanceof Error)) return error
    // Not chained as a cause: ioredis attaches the failed command's arguments to its errors.
    if (error.name === 'MaxRetriesPerRequestError') return new Error(`Redis connection failed: ${connectionError.message}`)
    return new Error(`${error.message} (last connection error: ${connectionError.message})`)
  }
  const inFlight = new Set<Promise<unknown>>()
  let isClosed = false
  let closing: Promise<void> | undefined

  const withTimeout = <R>(promise: Promise<R>): Promise<R> => withDeadline(promise, commandTimeoutMs, timeoutError)

  /** Runs Redis commands, turning every client failure (down, silent, closed) into `StorageUnavailableError`. */
  const run = async <R>(task: () => Promise<R>): Promise<R> => {
    if (isClosed) throw new StorageUnavailableError('Storage is closed')
    // The last connection attempt failed and the next is not due yet: say so now rather than queue.
    if (DOWN_STATUSES.has(client.status)) throw unavailable(withConnectionError(new Error(`Redis connection is ${client.status}`)))
    const pending = withTimeout(Promise.resolve().then(task))
    inFlight.add(pending)
    try {
      return await pending
    } catch (error) {
      // A silent connection may be half-open, or out of step if a reply was lost: replace it rather
      // than queue behind it forever. Commands still waiting on it fail, as they would have anyway.
      if (ownsClient && isTimeout(error) && (client.status === 'ready' || client.status === 'connect')) {
        client.disconnect(true)
      }
      throw unavailable(withConnectionError(error))
    } finally {
      inFlight.delete(pending)
    }
  }

  const runScriptWithKeys = (script: Script, keys: string[], args: string[]): Promise<unknown> =>
    run(async () => {
      try {
        return await client.evalsha(script.sha, keys.length, ...keys, ...args)
      } catch (error) {
        // The script cache is empty after a restart or SCRIPT FLUSH; EVAL runs the script and caches it again.
        if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
        return client.eval(script.lua, keys.length, ...keys, ...args)
      }
    })
  const runScript = (script: Script, key: string, args: string[]): Promise<unknown> => runScriptWithKeys(script, [key], args)

  const tallies = createRedisTallies({
    prefix,
    client,
    run,
    runScript: runScriptWithKeys,
    assertOpen: () => {
      if (isClosed) throw new StorageUnavailableError('Storage is closed')
    },
  })

  const collectionBase = (collection: string): string => {
    assertKeyText(collection, 'collection')
    return `${prefix}{${encodeKeyPart(collection)}}:`
  }

  return checkedDriver({
    name: 'redis',

    async create<T extends JsonObject>(collection: string, input: RecordInput<T>): Promise<StoredRecord<T>> {
      const base = collectionBase(collection)
      const record = toStoredRecord(input, 1)
      assertRecordText(record)
      const created = await runScript(SCRIPTS.create, `${base}all`, [
        record.id,
        record.sortKey,
        JSON.stringify(record.indexes),
        JSON.stringify(record.uniques),
        JSON.stringify(record.data),
      ])
      if (created !== 1) throw new StorageConflictError('unique')
      return record
    },

    async createMany<T extends JsonObject>(collection: string, inputs: RecordInput<T>[]): Promise<Array<StoredRecord<T> | null>> {
      const base = collectionBase(collection)
      const records = inputs.map((input) => toStoredRecord(input, 1))
      for (const record of records) assertRecordText(record)
      if (records.length === 0) return []
      const args = records.flatMap((record) => [
        record.id,
        record.sortKey,
        JSON.stringify(record.indexes),
        JSON.stringify(record.uniques),
        JSON.stringify(record.data),
      ])
      const created = (await runScript(SCRIPTS.createMany, `${base}all`, args)) as number[]
      return records.map((record, index) => (created[index] === 1 ? record : null))
    },

    async get<T extends JsonObject>(collection: string, id: string): Promise<StoredRecord<T> | null> {
      const base = collectionBase(collection)
      assertKeyText(id, 'id')
      const fields = await run(() => client.hmget(`${base}r:${encodeKeyPart(id)}`, ...RECORD_FIELDS))
      return toRecord<T>(fields)
    },

    async findByUnique<T extends JsonObject>(collection: string, uniqueKey: string): Promise<StoredRecord<T> | null> {
      const base = collectionBase(collection)
      assertKeyText(uniqueKey, 'uniqueKey')
      const fields = await runScript(SCRIPTS.findByUnique, `${base}all`, [uniqueKey])
      return Array.isArray(fields) ? toRecord<T>(fields as Array<string | null>) : null
    },

    async update<T extends JsonObject>(
      collection: string,
      id: string,
      expectedVersion: number,
      input: RecordInput<T>,
    ): Promise<StoredRecord<T> | null> {
      const base = collectionBase(collection)
      const record = toStoredRecord(input, expectedVersion + 1)
      assertRecordText(record)
      const outcome = await runScript(SCRIPTS.update, `${base}all`, [
        id,
        String(expectedVersion),
        String(record.version),
        record.sortKey,
        JSON.stringify(record.indexes),
        JSON.stringify(record.uniques),
        JSON.stringify(record.data),
      ])
      if (outcome === 0) return null
      if (outcome === -1) throw new StorageConflictError('version')
      if (outcome === -2) throw new StorageConflictError('unique')
      return record
    },

    async delete(collection: string, id: string, expectedVersion?: number): Promise<boolean> {
      const base = collectionBase(collection)
      assertKeyText(id, 'id')
      const outcome = await runScript(SCRIPTS.delete, `${base}all`, [
        id,
        expectedVersion === undefined ? '' : String(expectedVersion),
      ])
      if (outcome === -1) throw new StorageConflictError('version')
      return outcome === 1
    },

    async list<T extends JsonObject>(collection: string, query: ListQuery = {}): Promise<ListResult<T>> {
      const base = collectionBase(collection)
      const where = Object.entries(query.where ?? {})
      for (const [field, value] of where) {
        assertKeyText(field, 'query.where')
        assertKeyText(value, 'query.where')
      }
      const reply = (await runScript(SCRIPTS.list, `${base}all`, [
        String(query.offset ?? 0),
        String(query.limit ?? -1),
        ...where.flat(),
      ])) as [number, ...Array<string | null>]
      const [totalCount, ...fields] = reply
      const items: StoredRecord<T>[] = []
      for (let index = 0; index < fields.length; index += RECORD_FIELDS.length) {
        const record = toRecord<T>(fields.slice(index, index + RECORD_FIELDS.length))
        if (record) items.push(record)
      }
      return { items, totalCount }
    },

    async increment(key: string, amount: number, ttlMs: number): Promise<CounterResult> {
      assertKeyText(key, 'counter key')
      const counterKey = `${prefix}{counter:${encodeKeyPart(key)}}`
      const [value, expiresAt] = (await runScript(SCRIPTS.increment, counterKey, [String(amount), String(ttlMs)])) as [
        string,
        string,
      ]
      return { value: parseLuaNumber(value), expiresAt: Number(expiresAt) }
    },

    ...tallies,

    close(): Promise<void> {
      closing ??= (async () => {
        isClosed = true
        await Promise.allSettled([...inFlight])
        if (!ownsClient) return
        try {
          await withTimeout(client.quit())
        } catch {
          // QUIT could not be sent or answered; dropping the socket below releases everything anyway.
        } finally {
          if (client.status !== 'end') client.disconnect()
        }
      })()
      return closing
    },
  })
}
