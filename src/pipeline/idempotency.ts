/**
 * `Idempotency-Key` for routes that opt in: the first request with a key runs and its response is
 * kept; a retry with the same key and the same request replays it; the same key with a different
 * request is refused (409). Claiming a key is one atomic create, so concurrent retries from several
 * gateway processes run the handler once.
 */

import { sha256Hex } from '../core/crypto'
import { ConflictError, InvalidRequestError, StorageConflictError } from '../core/errors'
import { toResponse, type JsonReply, type Reply } from '../core/reply'
import type { IdempotencyRecord, IdempotencyRepository } from '../repositories/idempotency-keys'

export const IDEMPOTENCY_HEADER = 'idempotency-key'
const KEY_MAX = 255
/** How long a key remembers its response (as Stripe and OpenRouter's interns do: a day). */
const RETENTION_MS = 24 * 60 * 60 * 1000
/** How long a request may hold a key before a retry may assume it crashed and take over. */
const LOCK_MS = 60 * 1000

export interface IdempotentCall {
  key: string
  accountId: string
  /** Identifies the operation, e.g. `POST /workspaces`. */
  scope: string
  /** The validated request; equal requests must serialise equally. */
  request: unknown
  now: () => number
}

/** Reads and checks the header; `null` when absent. spec: 1..255 characters, empty or longer → 400. */
export const readIdempotencyKey = (request: Request): string | null => {
  const key = request.headers.get(IDEMPOTENCY_HEADER)
  if (key === null) return null
  if (key.length === 0 || key.length > KEY_MAX) {
    throw new InvalidRequestError(`Idempotency-Key header must be 1 to ${KEY_MAX} characters`, { reason: 'invalid_body' })
  }
  return key
}

const replay = (record: IdempotencyRecord): JsonReply => ({
  kind: 'json',
  status: record.response!.status,
  headers: new Headers({ 'content-type': record.response!.contentType, 'idempotent-replayed': 'true' }),
  text: record.response!.body,
})

/** The answer as text and head; idempotent routes answer JSON, so this never buffers a stream in practice. */
const readReply = async (reply: Reply): Promise<JsonReply> => {
  if (reply.kind === 'json') return reply
  const response = toResponse(reply)
  return { kind: 'json', status: response.status, headers: new Headers(response.headers), text: await response.text() }
}

const reused = () =>
  new ConflictError('This Idempotency-Key was already used with a different request', { reason: 'idempotency_key_reused' })

const inProgress = () =>
  new ConflictError('A request with this Idempotency-Key is still in progress; retry shortly', {
    reason: 'idempotency_key_in_progress',
    headers: { 'retry-after': '1' },
  })

/** Runs `handle` at most once per key (per account and scope) and replays its response afterwards. */
export const runIdempotent = async (
  repository: IdempotencyRepository,
  call: IdempotentCall,
  handle: () => Promise<Reply>,
): Promise<Reply> => {
  const id = await sha256Hex(`${call.accountId}\u0000${call.scope}\u0000${call.key}`)
  const fingerprint = await sha256Hex(JSON.stringify(call.request))
  const fresh = (): IdempotencyRecord => {
    const now = call.now()
    return {
      id,
      accountId: call.accountId,
      fingerprint,
      state: 'pending',
      lockedUntil: now + LOCK_MS,
      expiresAt: now + RETENTION_MS,
      response: null,
      createdAt: new Date(now).toISOString(),
    }
  }

  let held = await repository.claim(fresh())
  for (let attempt = 0; !held && attempt < 3; attempt++) {
    const existing = await repository.get(id)
    if (!existing) {
      held = await repository.claim(fresh())
      continue
    }
    const record = existing.data
    const now = call.now()
    if (record.expiresAt <= now) {
      await repository.remove(id, existing.version).catch(() => false)
      held = await repository.claim(fresh())
      continue
    }
    if (record.fingerprint !== fingerprint) throw reused()
    if (record.state === 'completed') return replay(record)
    if (record.lockedUntil > now) throw inProgress()
    // The holder went silent past its lock: take the key over, unless another retry just did.
    try {
      held = await repository.replace(id, existing.version, { ...record, lockedUntil: now + LOCK_MS })
    } catch (error) {
      if (error instanceof StorageConflictError) throw inProgress()
      throw error
    }
  }
  if (!held) throw inProgress()

  let response: JsonReply
  try {
    response = await readReply(await handle())
  } catch (error) {
    // A failed attempt frees the key so the client can retry it.
    await repository.remove(id, held.version).catch(() => false)
    throw error
  }
  const body = response.text
  const completed: IdempotencyRecord = {
    ...held.data,
    state: 'completed',
    response: { status: response.status, contentType: response.headers.get('content-type') ?? 'application/json', body },
  }
  // If another retry took over meanwhile, its outcome wins the record; ours is still returned.
  await repository.replace(id, held.version, completed).catch(() => null)
  return response
}
