/**
 * Tallies on Redis (the contract's `hold`, `settle`, `renewHolds`, `releaseExpiredHolds`, `readTallies`).
 * Each call is one Lua script (a large settle batch a few), so every hold, settlement and release is atomic.
 *
 * Key layout, all under one hash tag (`<prefix>{tally}:`, written `<t>` below), so every key of every tally
 * script lives in one Redis Cluster slot; keys and ids are escaped as the driver escapes every other part:
 *   `<t>t:<key>`     hash: value, expiresAt (absolute, from the server's clock), with PEXPIREAT at expiresAt
 *   `<t>h:<id>`      hash: owner, changes (the hold's changes as JSON: key, amount, ttlMs)
 *   `<t>leases`      sorted set: member the hold's id (unescaped), score its lease's end (server clock)
 *   `<t>s:<id>`      string: the id was settled; expires SETTLEMENT_MEMORY_MS after it was
 *   `<t>upgraded`    string: the `spend:` counters of an older version were carried into tallies
 *   `<t>m:<key>`     string, Cluster only: the old counter of `key` was carried over (expires with it)
 * Redis expires tallies and settled ids by itself; holds go when settled or released, so nothing grows without bound.
 *
 * One slot means one primary runs every tally script of a gateway, one after the other. A script of a hold or
 * a settlement touches a handful of keys; a single Redis primary runs such scripts at tens of thousands per
 * second, well above what the requests that cause them reach. In return a settlement releases its hold and adds
 * its cost, and a sweep releases expired holds, atomically across tallies any request may share (a key's, its
 * workspace's, its account's), which tallies spread over slots could not give without a transaction of their own.
 *
 * Scripts declare in KEYS every key the caller can name: the lease index, each id's hold and settled marker, each
 * change's tally. A released hold's own tallies are known only from its stored changes, so `settle` and
 * `releaseExpiredHolds` reach those keys from inside the script. Redis asks scripts to declare their keys, but
 * what a Cluster enforces is that a script stays in the slot it was sent to, and the `{tally}` tag guarantees it.
 */
import { StorageConflictError, StorageUnavailableError } from '../core/errors'
import { SETTLEMENT_MEMORY_MS, type CounterResult, type StorageDriver, type TallyHold, type TallySettlement } from './contract'
import { LUA_ENCODE, LUA_FORMAT_NUMBER, LUA_NOW, assertKeyText, defineScript, encodeKeyPart, parseLuaNumber, type Script } from './redis-lua'

/** A Redis server (or one Cluster primary) as the upgrade scans it. */
export interface ScanNode {
  scan(cursor: string, matchToken: 'MATCH', pattern: string, countToken: 'COUNT', count: number): Promise<[string, string[]]>
}

/** The plain commands of an ioredis `Redis` or `Cluster` the tallies use besides scripts. */
export interface TallyClient extends ScanNode {
  /** True on an ioredis `Cluster`. */
  readonly isCluster?: boolean
  /** A Cluster's nodes; its primaries hold every key once. */
  nodes?(role: 'master'): ScanNode[]
  get(key: string): Promise<string | null>
  set(key: string, value: string): Promise<unknown>
  hmget(key: string, ...fields: string[]): Promise<Array<string | null>>
  del(...keys: string[]): Promise<number>
}

/** What the driver lends the tallies: its client, and its way of running commands (timeouts, outages, closing). */
export interface TallyContext {
  prefix: string
  client: TallyClient
  /** Runs commands, turning every client failure into `StorageUnavailableError`. */
  run<R>(task: () => Promise<R>): Promise<R>
  /** Runs a script with these KEYS and ARGV, as `run` does. */
  runScript(script: Script, keys: string[], args: string[]): Promise<unknown>
  /** Throws `StorageUnavailableError` once the driver is closed. */
  assertOpen(): void
}

export type TallyMethods = Pick<StorageDriver, 'hold' | 'settle' | 'renewHolds' | 'releaseExpiredHolds' | 'readTallies'>

/**
 * At most this many settlements, and about this many keys, go in one script call: a batch of a thousand
 * settlements would otherwise hold the server for one long script and send one very long command. Each settlement
 * stays atomic on its own, as the contract asks; only the batch is split.
 */
const SETTLEMENTS_PER_CALL = 100
const KEYS_PER_CALL = 1_000
/** Ids per `renewHolds` script call, for the same reason. */
const IDS_PER_CALL = 1_000
/** How many keys one SCAN step of the upgrade asks for. */
const SCAN_COUNT = 1_000

// Every tally script gets `<t>leases` as KEYS[1]: it routes the call to the tally slot and names the base of the
// keys the script builds itself. Time is the server's, read once, so one call sees one instant throughout.
const TALLY_PRELUDE = LUA_ENCODE + LUA_FORMAT_NUMBER + LUA_NOW + String.raw`
local leases = KEYS[1]
local base = string.sub(leases, 1, -7)
-- The tally's value and expiresAt as stored, or nil when it is absent or expired (Redis may not have evicted it yet).
local function liveTally(key)
  local current = redis.call('HMGET', key, 'value', 'expiresAt')
  if current[2] and tonumber(current[2]) > now then return current[1], current[2] end
  return nil
end
-- As INCREMENT adds to a counter: a tally absent or expired starts again at amount, expiring ttlMs from now.
local function addTo(key, amount, ttlMs)
  local value, expiresAt = liveTally(key)
  if value then
    value = formatNumber(tonumber(value) + amount)
    redis.call('HSET', key, 'value', value)
    return value, expiresAt
  end
  value = formatNumber(amount)
  expiresAt = string.format('%.0f', now + ttlMs)
  redis.call('HSET', key, 'value', value, 'expiresAt', expiresAt)
  redis.call('PEXPIREAT', key, expiresAt)
  return value, expiresAt
end
-- Only from a live tally: one that expired since the hold was made starts again at 0 and owes nothing back.
local function takeBack(key, amount)
  local value = liveTally(key)
  if value then redis.call('HSET', key, 'value', formatNumber(tonumber(value) - amount)) end
end
-- Ends a hold, giving back what it added; false when there was none.
local function release(holdKey, id)
  local changes = redis.call('HGET', holdKey, 'changes')
  redis.call('ZREM', leases, id)
  if not changes then return false end
  for _, change in ipairs(cjson.decode(changes)) do takeBack(base .. 't:' .. enc(change.key), change.amount) end
  redis.call('DEL', holdKey)
  return true
end
`

// KEYS: leases, the hold, the id's settled marker, then each change's tally. ARGV: id, owner, leaseMs, the changes
// as JSON, then amount and ttlMs of each change. Returns 0 when the id is held or was settled, else each tally's
// value and expiresAt in turn, as strings.
const HOLD = String.raw`
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local results = {}
for index = 4, #KEYS do
  local argument = 5 + (index - 4) * 2
  local value, expiresAt = addTo(KEYS[index], tonumber(ARGV[argument]), tonumber(ARGV[argument + 1]))
  results[#results + 1] = value
  results[#results + 1] = expiresAt
end
redis.call('HSET', KEYS[2], 'owner', ARGV[2], 'changes', ARGV[4])
redis.call('ZADD', leases, string.format('%.0f', now + tonumber(ARGV[3])), ARGV[1])
return results
`

// KEYS: leases, then for each settlement its settled marker, its hold and each change's tally.
// ARGV: for each settlement its id, its number of changes, then amount and ttlMs of each change.
// Returns how many settlements were applied (the others were settled before).
const SETTLE = String.raw`
local key, argument, applied = 2, 1, 0
while argument <= #ARGV do
  local id, count = ARGV[argument], tonumber(ARGV[argument + 1])
  if redis.call('EXISTS', KEYS[key]) == 0 then
    redis.call('SET', KEYS[key], '1', 'PX', ${SETTLEMENT_MEMORY_MS})
    release(KEYS[key + 1], id)
    for change = 0, count - 1 do
      addTo(KEYS[key + 2 + change], tonumber(ARGV[argument + 2 + change * 2]), tonumber(ARGV[argument + 3 + change * 2]))
    end
    applied = applied + 1
  end
  key = key + 2 + count
  argument = argument + 2 + count * 2
end
return applied
`

// KEYS: leases. ARGV: leaseMs, then distinct ids. Returns how many of them were held.
const RENEW = String.raw`
local expiresAt = string.format('%.0f', now + tonumber(ARGV[1]))
local renewed = 0
for index = 2, #ARGV do
  if redis.call('ZSCORE', leases, ARGV[index]) then
    redis.call('ZADD', leases, 'XX', expiresAt, ARGV[index])
    renewed = renewed + 1
  end
end
return renewed
`

// KEYS: leases. ARGV: limit. Returns how many holds were released. One script, so two sweeps never take one hold.
const RELEASE_EXPIRED = String.raw`
local released = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))) do
  if release(base .. 'h:' .. enc(id), id) then released = released + 1 end
end
return released
`

// KEYS: leases, then the tallies. Returns each value as stored, '0' for one absent or expired.
const READ = String.raw`
local values = {}
for index = 2, #KEYS do values[#values + 1] = liveTally(KEYS[index]) or '0' end
return values
`

// Adds an old counter's live value to a tally; the earlier expiry wins, as the first change of a period set it.
const LUA_MERGE = String.raw`
local function merge(key, amount, expiresAt)
  local value, currentExpiresAt = liveTally(key)
  if value and tonumber(currentExpiresAt) <= tonumber(expiresAt) then
    redis.call('HSET', key, 'value', formatNumber(tonumber(value) + amount))
    return
  end
  redis.call('HSET', key, 'value', formatNumber((value and tonumber(value) or 0) + amount), 'expiresAt', expiresAt)
  redis.call('PEXPIREAT', key, expiresAt)
end
`

// Standalone server. KEYS: leases, the old counter, the tally. Moves the counter into the tally and deletes it, in
// one step, so a second upgrader finds nothing to move. Returns 1 when a live value was moved.
const UPGRADE_COUNTER = LUA_MERGE + String.raw`
local current = redis.call('HMGET', KEYS[2], 'value', 'expiresAt')
if not current[2] then return 0 end
redis.call('DEL', KEYS[2])
if tonumber(current[2]) <= now then return 0 end
merge(KEYS[3], tonumber(current[1]), current[2])
return 1
`

// Cluster: the old counter lives in another slot, so the caller reads it, runs this, then deletes it. KEYS: leases,
// the marker, the tally. ARGV: the old value, its expiresAt. The marker makes a rerun (a crash before the delete,
// two upgraders at once) add nothing twice; it lasts as long as the old counter could. Returns 1 when added.
const UPGRADE_COUNTER_MARKED = LUA_MERGE + String.raw`
if tonumber(ARGV[2]) <= now or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[2], '1')
redis.call('PEXPIREAT', KEYS[2], ARGV[2])
merge(KEYS[3], tonumber(ARGV[1]), ARGV[2])
return 1
`

const SCRIPTS = {
  hold: defineScript(TALLY_PRELUDE + HOLD),
  settle: defineScript(TALLY_PRELUDE + SETTLE),
  renew: defineScript(TALLY_PRELUDE + RENEW),
  releaseExpired: defineScript(TALLY_PRELUDE + RELEASE_EXPIRED),
  read: defineScript(TALLY_PRELUDE + READ),
  upgradeCounter: defineScript(TALLY_PRELUDE + UPGRADE_COUNTER),
  upgradeCounterMarked: defineScript(TALLY_PRELUDE + UPGRADE_COUNTER_MARKED),
}

/** Escapes what SCAN's MATCH treats as pattern syntax, so the prefix matches only itself. */
const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, (character) => `\\${character}`)

const toResults = (reply: string[]): CounterResult[] => {
  const results: CounterResult[] = []
  for (let index = 0; index < reply.length; index += 2) {
    results.push({ value: parseLuaNumber(reply[index]!), expiresAt: Number(reply[index + 1]) })
  }
  return results
}

/** One script call of a settle batch. */
interface SettleCall {
  keys: string[]
  args: string[]
  settlements: number
}

/** The tally methods of the Redis driver, over the driver's client and its way of running commands. */
export const createRedisTallies = (context: TallyContext): TallyMethods => {
  const { prefix, client, run, runScript } = context
  const base = `${prefix}{tally}:`
  const leasesKey = `${base}leases`
  const tallyKey = (encodedKey: string) => `${base}t:${encodedKey}`
  const holdKey = (id: string) => `${base}h:${encodeKeyPart(id)}`
  const settledKey = (id: string) => `${base}s:${encodeKeyPart(id)}`
  /** The old counters' keys: `<prefix>{counter:<encoded key>}` (see the layout in redis.ts), for keys `spend:…`. */
  const oldCounterStart = `${prefix}{counter:${encodeKeyPart('spend:')}`

  /** Carries one old counter into the tally of the same key. */
  const moveCounter = async (oldKey: string, isCluster: boolean): Promise<void> => {
    if (!oldKey.startsWith(oldCounterStart) || !oldKey.endsWith('}')) return
    const encodedKey = oldKey.slice(`${prefix}{counter:`.length, -1)
    if (!isCluster) {
      await runScript(SCRIPTS.upgradeCounter, [leasesKey, oldKey, tallyKey(encodedKey)], [])
      return
    }
    const [value, expiresAt] = await run(() => client.hmget(oldKey, 'value', 'expiresAt'))
    if (value != null && expiresAt != null) {
      await runScript(SCRIPTS.upgradeCounterMarked, [leasesKey, `${base}m:${encodedKey}`, tallyKey(encodedKey)], [value, expiresAt])
    }
    await run(() => client.del(oldKey))
  }

  /**
   * Spend was kept in ordinary counters (`spend:…`) before tallies existed: carries each into the tally of the same
   * key, once per store, so a deployment keeps its period's spend and limits across the upgrade.
   */
  const upgradeSpendCounters = async (): Promise<void> => {
    const upgradedKey = `${base}upgraded`
    if ((await run(() => client.get(upgradedKey))) !== null) return
    const isCluster = client.isCluster === true
    const nodes = isCluster ? (client.nodes?.('master') ?? []) : [client]
    // A Cluster that lists no primary yet has not learnt its slots: marking the store upgraded would skip every counter.
    if (nodes.length === 0) throw new StorageUnavailableError('Storage is unavailable')
    const pattern = `${escapeGlob(oldCounterStart)}*}`
    for (const node of nodes) {
      let cursor = '0'
      do {
        const [next, keys] = await run(() => node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT))
        await Promise.all(keys.map((key) => moveCounter(key, isCluster)))
        cursor = next
      } while (cursor !== '0')
    }
    await run(() => client.set(upgradedKey, '1'))
  }

  let upgrading: Promise<void> | undefined
  /** The first tally call of this driver runs the upgrade (a `GET` once it is done); a failed one runs again next call. */
  const upgraded = (): Promise<void> => {
    upgrading ??= upgradeSpendCounters().catch((error: unknown) => {
      upgrading = undefined
      throw error
    })
    return upgrading
  }

  const runTally = async (script: Script, keys: string[], args: string[]): Promise<unknown> => {
    await upgraded()
    return runScript(script, [leasesKey, ...keys], args)
  }

  const changeKeys = (changes: TallySettlement['changes']): string[] =>
    changes.map((change) => tallyKey(encodeKeyPart(change.key)))
  const changeArgs = (changes: TallySettlement['changes']): string[] =>
    changes.flatMap((change) => [String(change.amount), String(change.ttlMs)])
  const assertChangeText = (changes: TallySettlement['changes']): void => {
    for (const change of changes) assertKeyText(change.key, 'tally key')
  }

  /** Splits a batch into calls of at most SETTLEMENTS_PER_CALL settlements and about KEYS_PER_CALL keys. */
  const settleCalls = (settlements: ReadonlyArray<TallySettlement>): SettleCall[] => {
    const calls: SettleCall[] = []
    let call: SettleCall | undefined
    for (const settlement of settlements) {
      const keys = [settledKey(settlement.id), holdKey(settlement.id), ...changeKeys(settlement.changes)]
      if (!call || call.settlements === SETTLEMENTS_PER_CALL || call.keys.length + keys.length > KEYS_PER_CALL) {
        call = { keys: [], args: [], settlements: 0 }
        calls.push(call)
      }
      call.keys.push(...keys)
      call.args.push(settlement.id, String(settlement.changes.length), ...changeArgs(settlement.changes))
      call.settlements++
    }
    return calls
  }

  return {
    // Arguments arrive checked (src/storage/checked.ts); only what Redis cannot hold faithfully is checked here.
    async hold(hold: TallyHold): Promise<CounterResult[]> {
      assertKeyText(hold.id, 'hold.id')
      assertKeyText(hold.owner, 'hold.owner')
      assertChangeText(hold.changes)
      const changes = hold.changes.map(({ key, amount, ttlMs }) => ({ key, amount, ttlMs }))
      const reply = await runTally(SCRIPTS.hold, [holdKey(hold.id), settledKey(hold.id), ...changeKeys(changes)], [
        hold.id,
        hold.owner,
        String(hold.leaseMs),
        // JavaScript writes each amount with the digits that read back as the same double; cjson would round to 14.
        JSON.stringify(changes),
        ...changeArgs(changes),
      ])
      if (!Array.isArray(reply)) throw new StorageConflictError('unique')
      return toResults(reply as string[])
    },

    async settle(settlements: ReadonlyArray<TallySettlement>): Promise<void> {
      for (const settlement of settlements) {
        assertKeyText(settlement.id, 'settlement.id')
        assertChangeText(settlement.changes)
      }
      context.assertOpen()
      if (settlements.length === 0) return
      await upgraded()
      await Promise.all(settleCalls(settlements).map((call) => runTally(SCRIPTS.settle, call.keys, call.args)))
    },

    async renewHolds(ids: ReadonlyArray<string>, leaseMs: number): Promise<number> {
      for (const id of ids) assertKeyText(id, 'id')
      context.assertOpen()
      const distinct = [...new Set(ids)]
      const calls: Array<Promise<unknown>> = []
      for (let start = 0; start < distinct.length; start += IDS_PER_CALL) {
        calls.push(runTally(SCRIPTS.renew, [], [String(leaseMs), ...distinct.slice(start, start + IDS_PER_CALL)]))
      }
      const counts = (await Promise.all(calls)) as number[]
      return counts.reduce((total, count) => total + count, 0)
    },

    async releaseExpiredHolds(limit: number): Promise<number> {
      return (await runTally(SCRIPTS.releaseExpired, [], [String(limit)])) as number
    },

    async readTallies(keys: ReadonlyArray<string>): Promise<number[]> {
      for (const key of keys) assertKeyText(key, 'tally key')
      context.assertOpen()
      if (keys.length === 0) return []
      const values = (await runTally(
        SCRIPTS.read,
        keys.map((key) => tallyKey(encodeKeyPart(key))),
        [],
      )) as string[]
      return values.map(parseLuaNumber)
    },
  }
}
