/**
 * An SSE body read straight into an adapter's events. Each chunk is decoded, split into messages and
 * translated in one synchronous pass, and the events it made are handed out from a queue: one resolved
 * promise per event, where a chain of async generators (body → messages → events) costs several
 * promises and microtask turns per event at every layer.
 */

import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser'
import { Utf8StreamDecoder } from '../../core/utf8-stream'
import { DEFAULT_MAX_EVENT_BYTES, eventTooLarge, type SseMessage } from './sse'

/** An adapter's side of the reading: what each message means, and what the end of the body means. */
export interface SseTranslator<Event> {
  /** Pushes the events `message` makes onto `out`; throws for an in-band failure (after what it pushed). */
  message(message: SseMessage, out: Event[]): void
  /** The body ended: pushes the last events, or throws when the stream was cut short. */
  end(out: Event[]): void
  /** The body failed: throws what the consumer should see (the error itself when absent), or returns when the answer was whole already. */
  bodyFailed?(error: unknown): void
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined }

class SseEventReader<Event> implements AsyncIterableIterator<Event> {
  readonly #body: AsyncIterator<Uint8Array>
  readonly #translator: SseTranslator<Event>
  readonly #maxEventBytes: number
  readonly #decoder = new Utf8StreamDecoder()
  readonly #parser: EventSourceParser
  #queue: Event[] = []
  #head = 0
  #pendingBytes = 0
  #messageCount = 0
  #isBodyDone = false
  #failure: { error: unknown } | undefined

  constructor(body: AsyncIterable<Uint8Array>, translator: SseTranslator<Event>, maxEventBytes: number) {
    this.#body = body[Symbol.asyncIterator]()
    this.#translator = translator
    this.#maxEventBytes = maxEventBytes
    this.#parser = createParser({
      onEvent: (message: EventSourceMessage) => {
        this.#messageCount++
        translator.message(message, this.#queue)
      },
    })
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Event> {
    return this
  }

  next(): Promise<IteratorResult<Event>> {
    if (this.#head < this.#queue.length) return Promise.resolve({ done: false, value: this.#shift() })
    if (this.#failure) {
      const { error } = this.#failure
      this.#failure = undefined
      this.#isBodyDone = true
      return Promise.reject(error)
    }
    if (this.#isBodyDone) return Promise.resolve(DONE)
    return this.#read()
  }

  /** A consumer that stops early gives up the rest of the body (the transport aborts the exchange). */
  async return(): Promise<IteratorResult<Event>> {
    this.#queue = []
    this.#head = 0
    this.#failure = undefined
    if (!this.#isBodyDone) {
      this.#isBodyDone = true
      await this.#body.return?.()
    }
    return DONE
  }

  #shift(): Event {
    const event = this.#queue[this.#head++]!
    if (this.#head === this.#queue.length) {
      this.#queue.length = 0
      this.#head = 0
    }
    return event
  }

  async #read(): Promise<IteratorResult<Event>> {
    while (this.#head === this.#queue.length && !this.#failure && !this.#isBodyDone) {
      let chunk: IteratorResult<Uint8Array>
      try {
        chunk = await this.#body.next()
      } catch (error) {
        this.#isBodyDone = true
        if (!this.#translator.bodyFailed) throw error
        this.#translator.bodyFailed(error)
        break
      }
      try {
        if (chunk.done) this.#end()
        else this.#feed(chunk.value)
      } catch (error) {
        // What came before the failure is still handed out first, as a generator would have yielded it.
        this.#failure = { error }
        if (!this.#isBodyDone) {
          this.#isBodyDone = true
          this.#body.return?.()?.catch(() => {})
        }
      }
    }
    return this.next()
  }

  #feed(chunk: Uint8Array): void {
    this.#pendingBytes += chunk.byteLength
    const messagesBefore = this.#messageCount
    this.#parser.feed(this.#decoder.decode(chunk))
    // The parser holds an incomplete event in full: the bound restarts with each chunk that completes one.
    if (this.#messageCount > messagesBefore) this.#pendingBytes = 0
    else if (this.#pendingBytes > this.#maxEventBytes) throw eventTooLarge(this.#maxEventBytes)
  }

  #end(): void {
    this.#isBodyDone = true
    this.#parser.feed(this.#decoder.end())
    // A final event without its blank line still counts: some upstreams end the body right after `data:`.
    this.#parser.feed('\n\n')
    this.#translator.end(this.#queue)
  }
}

/** Reads an SSE body through `translator`, never holding more than one incomplete event (bounded by `maxEventBytes`). */
export const readSseEvents = <Event>(
  body: AsyncIterable<Uint8Array>,
  translator: SseTranslator<Event>,
  maxEventBytes = DEFAULT_MAX_EVENT_BYTES,
): AsyncIterableIterator<Event> => new SseEventReader(body, translator, maxEventBytes)
