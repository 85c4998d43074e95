/**
 * A cached answer's key (docs/decisions.md, Response cache): the SHA-256 of a canonical form of the prepared request,
 * after presets, defaults, routers and guardrails' redactions, so two requests that would be sent the same way share
 * it. Every field that changes the answer is in it; the fields that only describe the caller or the delivery are not.
 * The workspace is part of what is hashed: one workspace never reads another's answers.
 */

import { sha256Hex } from '../../core/crypto'
import type { InferenceRequest } from '../../engine/request'
import { GUARDRAILS } from '../guardrails/request-guardrails'

/**
 * Body fields that change nothing in the answer: who asks (`user`, `safety_identifier`, `session_id`), what the
 * gateway records (`metadata`, `trace`), how it is delivered (`stream`, `store`), the preset already applied, and the
 * provider's own prompt-cache routing hint.
 */
const IGNORED_BODY_FIELDS: ReadonlySet<string> = new Set(['user', 'safety_identifier', 'session_id', 'metadata', 'trace', 'stream', 'store', 'preset', 'prompt_cache_key'])

/** Bumped when the form below changes, so entries written under the old form are never read under the new one. */
const KEY_FORM = 1

/** `value` as JSON with every object's keys sorted and `undefined` members left out: equal values, equal text. */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`
  const record = value as Record<string, unknown>
  const members = Object.keys(record)
    .filter((name) => record[name] !== undefined)
    .sort()
    .map((name) => `${JSON.stringify(name)}:${canonicalJson(record[name])}`)
  return `{${members.join(',')}}`
}

/** The hex SHA-256 of what `kind` of request (`responses`, `embeddings`) asks in `workspaceId`: the entry's id. */
export const hashCacheKey = (kind: string, workspaceId: string, form: unknown): Promise<string> =>
  sha256Hex(canonicalJson({ form: KEY_FORM, kind, workspace: workspaceId, request: form }))

/** What of a prepared request decides its answer. */
const answerFormOf = (request: InferenceRequest) => {
  const body: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(request.body)) if (!IGNORED_BODY_FIELDS.has(name)) body[name] = value
  return {
    body,
    // The models routing chose (a router's pick, the workspace's default), in order; not the endpoints, which
    // health and load change from one request to the next.
    models: [...new Set(request.attempts.map((attempt) => attempt.model.slug))],
    requested: request.requestedModel,
    extensions: request.extensions ?? null,
    // A guardrail that changed governs the answer anew (its output scan redacts before the answer is stored).
    guardrails: (GUARDRAILS.get(request) ?? []).map(({ record }) => [record.id, record.updatedAt]),
  }
}

/**
 * The shape of a prepared request for the semantic cache: its key's form without its prompt (`input`,
 * `instructions`), so only requests that differ in what they ask, not in how they are to be answered, are compared.
 */
export const semanticShapeKey = (request: InferenceRequest): Promise<string> => {
  const { body, ...rest } = answerFormOf(request)
  const { input: _input, instructions: _instructions, ...shape } = body
  return hashCacheKey('responses-shape', request.spend.workspace.id, { ...rest, body: shape })
}

/** The key of a prepared `/responses`, `/chat/completions` or `/messages` request, in its workspace. */
export const responseCacheKey = (request: InferenceRequest): Promise<string> =>
  hashCacheKey('responses', request.spend.workspace.id, answerFormOf(request))
