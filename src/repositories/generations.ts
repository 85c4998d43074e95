/**
 * The usage ledger's records: one per served request ("generation"), keyed by the response id and written
 * once (docs/decisions.md, Usage ledger). Listed by account and UTC day for activity, and oldest first for
 * the retention sweep: the sort key is the creation time.
 */

import type { JsonObject, JsonValue, RecordInput, StorageDriver } from '../storage/contract'

export const GENERATIONS = 'generations'
export const GENERATION_CONTENTS = 'generation_contents'

/**
 * What a generation said, kept only where the workspace turned private logging on (docs/decisions.md,
 * Generation content), under the generation's id, and swept with it.
 */
export type GenerationContentRecord = {
  id: string
  createdAt: string
  /** The conversation as sent: the system prompt first, then the input items. */
  input: { messages: JsonValue[] }
  output: { completion: string | null; reasoning: string | null }
  /** OpenRouter's stored failure, for a generation that failed. */
  error: {
    message: string | null
    status: number | null
    provider_name: string | null
    raw: null
    previous_errors: Array<{ code: number; message: string; provider_name: string | null; raw: null }>
  } | null
}

/** Which API the request came through. */
export type GenerationApi = 'responses' | 'chat_completions' | 'messages' | 'intern_chat' | 'embeddings'

/** How the answer ended; `cancelled` when the client stopped a stream it had started to receive. */
export type GenerationStatus = 'completed' | 'incomplete' | 'failed' | 'cancelled'

export type GenerationTokens = {
  input: number
  output: number
  /** Part of `input` read from the provider's prompt cache. */
  cached: number
  /** Part of `output` spent on reasoning. */
  reasoning: number
}

/** One upstream attempt, in the order they were sent. */
export type GenerationAttempt = {
  provider: string
  model: string
  /** The provider's own id for the model. */
  endpoint: string
  isByok: boolean
  /** 200 for the attempt that answered, the failure's status otherwise, null when the client left first. */
  status: number | null
  latencyMs: number
}

/** What `service_metadata` would have said about the routing, kept whether or not the caller asked for it. */
export type GenerationRouting = {
  requested: string
  /** `service_metadata.strategy`: how the serving model was chosen (a router's or fusion's name when one chose it). */
  strategy: 'direct' | 'fallback' | 'auto' | 'pareto' | 'fusion'
  /** Attempts sent. */
  attempts: number
  /** Endpoints the routing planned. */
  endpointsPlanned: number
  region: string
}

/** What a guardrail's content filters found in a request (redacted, flagged, blocked), or the rules that refused it. */
export type GenerationGuardrailEvent = {
  guardrailId: string
  scope: 'key' | 'member' | 'workspace'
  direction: 'input' | 'output'
  action: 'block' | 'redact' | 'flag'
  /** Builtin slugs and pattern labels (never what they matched), or the refusing rules' fields (`limit_usd`, …). */
  patterns: string[]
  matches: number
}

/**
 * The spend settlements that charged a generation, sent only once its record landed, so that what a killed process
 * never sent can be sent again from the record (docs/decisions.md, "Books that balance").
 */
export type GenerationSpend = {
  /** `<process>|<period>`: the gateway process that sends them and the ten seconds it wrote the record in (an index). */
  batch: string
  /** Each settlement: its id, and what it adds to each counter as `[counter key, nano-dollars]`. */
  settlements: Array<{ id: string; changes: Array<[string, number]> }>
}

export type GenerationRecord = {
  /** The response id the caller received. */
  id: string
  /** ISO 8601 on the gateway's clock: when the request arrived. */
  createdAt: string
  requestId: string
  accountId: string
  workspaceId: string
  /** SHA-256 hex of the calling key, never the key. */
  keyHash: string
  /** The user the calling key acts for (its `creator_user_id`), which activity filters by. */
  userId: string
  api: GenerationApi
  requestedModel: string
  /** The model that served, or the one requested when none did. */
  model: string
  /** The serving provider; null when no attempt answered. */
  provider: string | null
  /** The serving provider's own id for the model. */
  endpoint: string | null
  isByok: boolean
  isStreamed: boolean
  status: GenerationStatus
  /** The HTTP status the answer carried, or its in-band failure's. */
  httpStatus: number
  /** The canonical `error_type` of a failure. */
  errorType: string | null
  /** OpenRouter's normalized finish reason: `stop`, `length`, `tool_calls`, `content_filter`, `error`, or null. */
  finishReason: string | null
  /** The Responses API's own ending: `completed`, `max_output_tokens`, `content_filter`, `failed`, `cancelled`. */
  nativeFinishReason: string | null
  tokens: GenerationTokens
  /** True when the tokens are an estimate: the upstream reported none (a stream cancelled, cut or ended by the gateway first). */
  isUsageEstimated: boolean
  /** What the caller was charged, in USD: the BYOK fee for BYOK requests. */
  cost: number
  /** What the provider billed the caller's own key (BYOK); null on the shared key. */
  upstreamCost: number | null
  /** The part of `cost` that is the BYOK fee (0 on the shared key). */
  byokFee: number
  /** From the request's arrival to the end of the answer, in ms. */
  latencyMs: number
  /** From the request's arrival to the first content the client received (streams); null for whole answers. */
  timeToFirstTokenMs: number | null
  /** From the first content to the end (streams), the upstream's answer time (whole answers). */
  generationTimeMs: number | null
  attempts: GenerationAttempt[]
  /** The keyed hash of `user` / `safety_identifier` sent upstream (src/engine/end-user.ts); null without one. */
  endUser: string | null
  /** A keyed hash of the session id, so sessions group without storing the caller's identifier. */
  session: string | null
  /** The request's `trace` object, as sent. */
  trace: JsonObject | null
  /** The preset the request used (its id); absent on records written before presets. */
  presetId?: string | null
  routing: GenerationRouting
  /** What the governing guardrails redacted, flagged or refused; absent when they found nothing. */
  guardrails?: GenerationGuardrailEvent[]
  /** Set when the response cache answered: the id of the generation whose answer was served again. */
  responseCacheSourceId?: string
  /** The settlements that charged it; absent when none did (nothing charged, or no limit's book kept). */
  spend?: GenerationSpend
}

/** `YYYY-MM-DD` of an ISO timestamp: the UTC day activity groups by. */
export const utcDay = (isoTime: string): string => isoTime.slice(0, 10)

const dayIndex = (accountId: string, day: string) => `${accountId}|${day}`

const DAY_MS = 86_400_000

/** Every UTC day from `from`'s to the one of the last instant before `to`, oldest first. */
const utcDaysBetween = (from: string, to: string): string[] => {
  const days: string[] = []
  const last = utcDay(new Date(Date.parse(to) - 1).toISOString())
  for (let time = Date.parse(`${utcDay(from)}T00:00:00.000Z`); ; time += DAY_MS) {
    const day = utcDay(new Date(time).toISOString())
    if (day > last) return days
    days.push(day)
  }
}

const DAY_INDEX_CACHE_MAX = 1024
// Every record of an account's day carries the same index value: one string shared by all of them, not one each,
// since the memory and file stores keep every record for the whole retention.
const dayIndexes = new Map<string, string>()

const sharedDayIndex = (accountId: string, createdAt: string): string => {
  const value = dayIndex(accountId, utcDay(createdAt))
  const shared = dayIndexes.get(value)
  if (shared !== undefined) return shared
  if (dayIndexes.size >= DAY_INDEX_CACHE_MAX) dayIndexes.clear()
  dayIndexes.set(value, value)
  return value
}

const toInput = (record: GenerationRecord): RecordInput<GenerationRecord> => ({
  id: record.id,
  data: record,
  // The ledger builds each record for its write alone and never touches it again: no copy is needed.
  isDataHandedOver: true,
  indexes: {
    accountId: record.accountId,
    accountDay: sharedDayIndex(record.accountId, record.createdAt),
    ...(record.spend ? { spendBatch: record.spend.batch } : {}),
  },
  // ISO 8601 in UTC sorts as time does; ties fall back to the id.
  sortKey: record.createdAt,
})

/** Records are read in pages, so one account's month never arrives as a single reply. */
const PAGE_SIZE = 500

/** Every record of an account, of one UTC day or of all, oldest first, read a page at a time. */
async function* listRecords(storage: StorageDriver, accountId: string, day?: string): AsyncGenerator<GenerationRecord> {
  const where: Record<string, string> = day === undefined ? { accountId } : { accountDay: dayIndex(accountId, day) }
  for (let offset = 0; ; offset += PAGE_SIZE) {
    const page = await storage.list<GenerationRecord>(GENERATIONS, { where, offset, limit: PAGE_SIZE })
    for (const item of page.items) yield item.data
    if (page.items.length < PAGE_SIZE || offset + PAGE_SIZE >= page.totalCount) return
  }
}

export const createGenerationsRepository = (storage: StorageDriver) => ({
  /**
   * Stores a batch in one store call; a record whose id is stored already stays as it was (written once). The
   * records are handed over to the store (`RecordInput.isDataHandedOver`): the caller built them for this call,
   * shares none of their objects and never changes them afterwards.
   */
  async store(records: GenerationRecord[]): Promise<void> {
    await storage.createMany(GENERATIONS, records.map(toInput))
  },

  async get(id: string): Promise<GenerationRecord | null> {
    return (await storage.get<GenerationRecord>(GENERATIONS, id))?.data ?? null
  },

  /** Keeps a generation's content; a second write of one id keeps the first. */
  async storeContent(content: GenerationContentRecord): Promise<void> {
    await storage.createMany(GENERATION_CONTENTS, [{ id: content.id, data: content, sortKey: content.createdAt }])
  },

  /** Every record of one settlement batch (`GenerationSpend.batch`), in pages. */
  async *listSpendBatch(batch: string): AsyncGenerator<GenerationRecord> {
    for (let offset = 0; ; offset += PAGE_SIZE) {
      const page = await storage.list<GenerationRecord>(GENERATIONS, { where: { spendBatch: batch }, offset, limit: PAGE_SIZE })
      for (const item of page.items) yield item.data
      if (page.items.length < PAGE_SIZE || offset + PAGE_SIZE >= page.totalCount) return
    }
  },

  async getContent(id: string): Promise<GenerationContentRecord | null> {
    return (await storage.get<GenerationContentRecord>(GENERATION_CONTENTS, id))?.data ?? null
  },

  /** Every record of an account, of one UTC day or of all, oldest first. */
  list: (accountId: string, day?: string) => listRecords(storage, accountId, day),

  /**
   * Records of an account created in `[from, to)` (ISO 8601), read day by day from the newest day back, at most
   * `cap` of them read from the store (records of the boundary days outside the range count too). `onCapped` is told
   * when the cap cut the reading short, so a caller can say its figures are partial.
   */
  async *listBetween(accountId: string, from: string, to: string, cap: number, onCapped: () => void): AsyncGenerator<GenerationRecord> {
    let read = 0
    for (const day of utcDaysBetween(from, to).reverse()) {
      for await (const record of listRecords(storage, accountId, day)) {
        if (read++ >= cap) return onCapped()
        if (record.createdAt >= from && record.createdAt < to) yield record
      }
    }
  },

  /**
   * Deletes up to `limit` of the oldest records created before `before` (ISO 8601). Resolves with how many
   * went, and whether older records may remain (the page was all expired).
   */
  async deleteOlderThan(before: string, limit: number): Promise<{ deleted: number; hasMore: boolean }> {
    const page = await storage.list<GenerationRecord>(GENERATIONS, { limit })
    const expired = page.items.filter((item) => item.sortKey < before)
    // Another process sweeping the same records deletes some first; `delete` then answers false, which is fine.
    // The content goes first: a sweep cut short between the two never leaves content without its record.
    await Promise.all(expired.map((item) => storage.delete(GENERATION_CONTENTS, item.id)))
    const outcomes = await Promise.all(expired.map((item) => storage.delete(GENERATIONS, item.id)))
    return { deleted: outcomes.filter(Boolean).length, hasMore: expired.length === limit && expired.length > 0 }
  },
})

export type GenerationsRepository = ReturnType<typeof createGenerationsRepository>
