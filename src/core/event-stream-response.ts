/**
 * Server-sent event answers inside the gateway. A web `ReadableStream` between the gateway and a Node socket
 * costs a pull, an enqueue and a read per event (about 10 µs each) and adds a hop before every token.
 * So a streamed answer is an `EventStreamResponse`: a `Response` that holds a producer, which writes each
 * event straight into whatever sink starts it. The Node bridge starts it with the socket as the sink; anyone
 * else reading `body` gets a web stream fed by the same producer, with the same backpressure.
 */

/** Where a producer writes its chunks. */
export interface ChunkSink {
  /** Sends a chunk; `false` asks the producer to wait for `ready()` before sending more. */
  write(chunk: string): boolean
  /** Resolves when the consumer can take more (or has gone away). */
  ready(): Promise<void>
  /** Ends the stream normally. */
  close(): void
  /** Ends the stream as broken: the consumer must not mistake what it got for the whole answer. */
  fail(error: unknown): void
}

/** Starts producing into `sink`; returns the function that stops the producer when the consumer goes away. */
export type ChunkProducer = (sink: ChunkSink) => () => void

const encoder = new TextEncoder()

// Backpressure for web consumers: a few events may wait in the stream's queue.
const WEB_STREAM_HIGH_WATER_MARK = 16

const usedBodyError = () => new TypeError('Body is unusable: Body has already been read')

/** Feeds a producer into a web byte stream. */
const toReadableStream = (produce: ChunkProducer): ReadableStream<Uint8Array<ArrayBuffer>> => {
  let stop: (() => void) | undefined
  let wake: (() => void) | undefined
  const waitForPull = () =>
    new Promise<void>((resolve) => {
      wake = resolve
    })
  return new ReadableStream<Uint8Array<ArrayBuffer>>(
    {
      start(controller) {
        let isDone = false
        stop = produce({
          write(chunk) {
            if (isDone) return false
            controller.enqueue(encoder.encode(chunk))
            return (controller.desiredSize ?? 0) > 0
          },
          ready: waitForPull,
          close() {
            if (isDone) return
            isDone = true
            controller.close()
          },
          fail(error) {
            if (isDone) return
            isDone = true
            controller.error(error)
          },
        })
      },
      pull() {
        const resolve = wake
        wake = undefined
        resolve?.()
      },
      cancel() {
        stop?.()
        wake?.()
      },
    },
    { highWaterMark: WEB_STREAM_HIGH_WATER_MARK },
  )
}

export class EventStreamResponse extends Response {
  readonly #produce: ChunkProducer
  #stream: ReadableStream<Uint8Array<ArrayBuffer>> | undefined
  #isStarted = false

  constructor(produce: ChunkProducer, init: { status?: number; headers: HeadersInit }) {
    super(null, init)
    this.#produce = produce
  }

  /** Starts the producer into `sink`, for a host that writes the events out itself. Returns the stop function. */
  start(sink: ChunkSink): () => void {
    if (this.#isStarted) throw usedBodyError()
    this.#isStarted = true
    return this.#produce(sink)
  }

  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> {
    if (!this.#stream) {
      if (this.#isStarted) throw usedBodyError()
      this.#isStarted = true
      this.#stream = toReadableStream(this.#produce)
    }
    return this.#stream
  }

  override get bodyUsed(): boolean {
    return this.#stream ? this.#stream.locked : this.#isStarted
  }

  override async text(): Promise<string> {
    if (this.bodyUsed) throw usedBodyError()
    return new Response(this.body).text()
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    if (this.bodyUsed) throw usedBodyError()
    return new Response(this.body).arrayBuffer()
  }

  override async blob(): Promise<Blob> {
    if (this.bodyUsed) throw usedBodyError()
    return new Response(this.body, { headers: this.headers }).blob()
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text())
  }

  override clone(): Response {
    // A producer runs once; a copy would need the events buffered, which a stream must never do.
    throw new TypeError('modelgate: an event stream response cannot be cloned; read its body once')
  }

  /** A plain `Response` with the same status and headers, whose body is fed by the producer. */
  toResponse(): Response {
    return new Response(this.body, { status: this.status, statusText: this.statusText, headers: this.headers })
  }
}
