/**
 * The key of a conversation that names no session (docs/decisions.md, "Sticky sessions"): the caller (workspace, API
 * key and end user), the models asked for and a hash of the prompt's opening, which every later turn of the same
 * conversation repeats and which the provider's prompt cache holds.
 */

import { sha256Hex } from '../core/crypto'

/** What the opening is read from: a Responses body's instructions and input, any shape of input items. */
interface Prompt {
  instructions?: string | null | undefined
  input?: unknown
}

/**
 * How much of the opening is read, in characters. Every turn pays for the hash, so it reads a bounded prefix: past
 * this much, two openings that agree are one conversation as far as the provider's cache goes.
 */
export const OPENING_CHARACTERS = 16_384

// Between the opening's pieces, so a piece's end is not read as the next one's start.
const SEPARATOR = '\u0000'

interface Budget {
  left: number
}

/** Appends `value`'s text (strings, numbers, keys) to `parts` until `budget` runs out; never reads past it. */
const appendBounded = (value: unknown, parts: string[], budget: Budget): void => {
  if (budget.left <= 0) return
  if (typeof value === 'string') {
    const piece = value.length > budget.left ? value.slice(0, budget.left) : value
    parts.push(piece, SEPARATOR)
    budget.left -= piece.length + 1
    return
  }
  if (typeof value !== 'object' || value === null) {
    parts.push(String(value), SEPARATOR)
    budget.left -= 8
    return
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      if (budget.left <= 0) return
      appendBounded(item, parts, budget)
    }
    return
  }
  for (const key in value) {
    if (budget.left <= 0) return
    parts.push(key, SEPARATOR)
    budget.left -= key.length + 1
    appendBounded((value as Record<string, unknown>)[key], parts, budget)
  }
}

/** Whether an input item is the caller's own message (a string input is one). */
const isUserMessage = (item: unknown) => (item as { role?: unknown }).role === 'user'

/**
 * The opening of the prompt: the instructions, then the input up to and including its first user message (the system
 * and developer messages before it, as Chat Completions and Messages requests arrive), read up to
 * `OPENING_CHARACTERS`.
 */
export const conversationOpening = (body: Prompt): string => {
  const parts: string[] = []
  const budget: Budget = { left: OPENING_CHARACTERS }
  appendBounded(body.instructions ?? '', parts, budget)
  const input = body.input
  if (!Array.isArray(input)) appendBounded(input ?? '', parts, budget)
  else {
    for (const item of input) {
      if (budget.left <= 0) break
      appendBounded(item, parts, budget)
      if (isUserMessage(item)) break
    }
  }
  return parts.join('')
}

/** The conversation's key: one caller's, for one list of models, by its opening's hash. */
export const conversationKey = async (
  caller: { workspaceId: string; keyHash: string; endUserId: string },
  models: readonly string[],
  body: Prompt,
): Promise<string> => `${caller.workspaceId} ${caller.keyHash} ${caller.endUserId} ${models.join(',')} ${await sha256Hex(conversationOpening(body))}`
