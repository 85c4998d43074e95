/**
 * Most of an OpenAI Responses stream is events modelgate emits exactly as OpenAI wrote them, but for
 * `sequence_number` (text deltas, content parts…). Such an event is kept as its JSON text and parsed only
 * if something reads its fields: a Responses writer sends the text (`wireJson`) with its own number. Parsing,
 * rebuilding and serialising each event again was the largest cost per event of a relayed stream.
 */

import { isItemEventType, type ItemEvent, type ItemEventType } from '../events'

/** The kinds the adapter rewrites (stream.ts): output items (normalised, call names noted) and the end of call arguments (named). */
type RewrittenType = 'response.output_item.added' | 'response.output_item.done' | 'response.function_call_arguments.done'

const REWRITTEN_TYPES = new Set<string>(['response.output_item.added', 'response.output_item.done', 'response.function_call_arguments.done'] satisfies RewrittenType[])

/** Every other item kind is passed on as sent. */
type AsSentType = Exclude<ItemEventType, RewrittenType>

const isAsSentType = (type: string): type is AsSentType => isItemEventType(type) && !REWRITTEN_TYPES.has(type)

/** Clients expect `logprobs` on both and OpenAI omits it on some models: an event without it is rebuilt instead. */
const NEEDS_LOGPROBS = new Set<string>(['response.output_text.delta', 'response.output_text.done'])

// A `"` inside a JSON string is always escaped, so `,"logprobs":` can only be the start of a key.
const LOGPROBS_KEY = ',"logprobs":'

const SCALAR_FIELDS = ['item_id', 'output_index', 'content_index', 'summary_index', 'text', 'refusal', 'partial_image_b64', 'partial_image_index'] as const

const DELTA_KEY = ',"delta":"'
const BACKSLASH = 92
const QUOTE = 34

/**
 * The top-level string `delta` of an event's JSON text, read without parsing the rest; `undefined` when it cannot
 * be told apart that cheaply. Only a key whose prefix opens no object or array but the event's own is top-level;
 * a `"` inside a JSON string is always escaped, so the first unescaped one ends the value. The text is the
 * upstream's own (flat, as the SSE reader cut it): searching a joined copy would first copy it whole.
 */
const readDelta = (json: string): string | undefined => {
  const keyAt = json.indexOf(DELTA_KEY)
  if (keyAt < 0 || json.lastIndexOf('{', keyAt) !== 0 || json.lastIndexOf('[', keyAt) >= 0) return undefined
  const start = keyAt + DELTA_KEY.length
  let hasEscape = false
  for (let index = start; index < json.length; index++) {
    const code = json.charCodeAt(index)
    if (code === BACKSLASH) {
      hasEscape = true
      index++
    } else if (code === QUOTE) {
      return hasEscape ? (JSON.parse(json.slice(start - 1, index + 1)) as string) : json.slice(start, index)
    }
  }
  return undefined
}
// Whoever reads one of these may change what it holds: the text is no longer known to match, so it is dropped.
const OBJECT_FIELDS = ['part', 'logprobs'] as const

/**
 * An item event held as the upstream's JSON text; its typed fields are read from that text on first use. The text
 * is kept as the upstream's `data` with the offsets of its `sequence_number`, which the event's own text leaves out:
 * cutting it out when the event is read would copy every event once more.
 */
class AsSentEvent {
  readonly type: AsSentType
  /** The `data` line as sent; undefined once a field was changed or handed out (the text no longer says it). */
  #data: string | undefined
  /** Where `,"sequence_number":N` starts and ends in `#data`. */
  readonly #numberFrom: number
  readonly #numberTo: number
  #fields: Record<string, unknown> | undefined
  #delta: string | undefined

  constructor(type: AsSentType, data: string, numberFrom: number, numberTo: number) {
    this.type = type
    this.#data = data
    this.#numberFrom = numberFrom
    this.#numberTo = numberTo
  }

  /** The event's JSON as the upstream wrote it, without `sequence_number`, until a field is changed or handed out. */
  get wireJson(): string | undefined {
    const data = this.#data
    return data === undefined ? undefined : data.slice(0, this.#numberFrom) + data.slice(this.#numberTo)
  }

  /** `wireJson` without its closing brace: the Responses writer appends its own `sequence_number` to it. */
  get wireJsonOpen(): string | undefined {
    const data = this.#data
    return data === undefined ? undefined : data.slice(0, this.#numberFrom) + data.slice(this.#numberTo, -1)
  }

  /**
   * Every observer of a stream reads each delta's length (spend and ledger estimates for a stream cut short), so
   * it is read straight from the text: parsing the whole event for it was the largest cost of a relayed delta.
   */
  get delta(): unknown {
    if (this.#fields) return this.#fields.delta
    return (this.#delta ??= readDelta(this.#data!)) ?? this.#parsed().delta
  }

  set delta(value: unknown) {
    this.#delta = undefined
    this.#parsed().delta = value
    this.#data = undefined
  }

  toJSON(): Record<string, unknown> {
    return this.#parsed()
  }

  #parsed(): Record<string, unknown> {
    return (this.#fields ??= JSON.parse(this.wireJson!) as Record<string, unknown>)
  }

  static {
    const define = (key: string, shouldDropText: boolean) =>
      Object.defineProperty(this.prototype, key, {
        get(this: AsSentEvent) {
          const fields = this.#parsed()
          if (shouldDropText) this.#data = undefined
          return fields[key]
        },
        set(this: AsSentEvent, value: unknown) {
          this.#parsed()[key] = value
          this.#data = undefined
        },
      })
    for (const key of SCALAR_FIELDS) define(key, false)
    for (const key of OBJECT_FIELDS) define(key, true)
  }
}

const SEQUENCE_KEY = ',"sequence_number":'
const TYPE_START = '{"type":"'
const TEXT_DELTA = 'response.output_text.delta'
const TEXT_DELTA_END = TYPE_START.length + TEXT_DELTA.length

const isDigit = (code: number) => code >= 48 && code <= 57

/**
 * The event an OpenAI `data:` line holds, kept as sent, when it is one of those kinds in OpenAI's own compact
 * layout (`{"type":"…","sequence_number":N,…}`); `undefined` for anything else, which the caller parses.
 */
export const readAsSent = (data: string): ItemEvent | undefined => {
  if (!data.startsWith(TYPE_START) || !data.endsWith('}')) return undefined
  const typeEnd = data.indexOf('"', TYPE_START.length)
  if (typeEnd < 0 || !data.startsWith(SEQUENCE_KEY, typeEnd + 1)) return undefined
  // Most of a stream is text deltas: their type is told without cutting it out of the text to look it up.
  const type = typeEnd === TEXT_DELTA_END && data.startsWith(TEXT_DELTA, TYPE_START.length) ? TEXT_DELTA : data.slice(TYPE_START.length, typeEnd)
  if (!isAsSentType(type)) return undefined
  if (NEEDS_LOGPROBS.has(type) && !data.includes(LOGPROBS_KEY)) return undefined
  const numberStart = typeEnd + 1 + SEQUENCE_KEY.length
  let numberEnd = numberStart
  while (isDigit(data.charCodeAt(numberEnd))) numberEnd++
  if (numberEnd === numberStart) return undefined
  // The upstream's number goes; the writer puts its own at the end, as on every event it serialises.
  // The fields are OpenAI's own for that type, read when first used: the member its `type` names.
  return new AsSentEvent(type, data, typeEnd + 1, numberEnd) as unknown as ItemEvent
}
