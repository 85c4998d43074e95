/**
 * Server-sent event answers inside the gateway. A web `ReadableStream` between the gateway and a Node socket
 * costs a pull, an enqueue and a read per event (about 10 µs each) and adds a hop before every token.
 * So a streamed answer is a producer that writes each event straight into whatever sink starts it
 * (an `events` reply, reply.ts). The Node bridge starts it with the socket as the sink; every other host
 * gets a web stream fed by the same producer, with the same backpressure.
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

/** Feeds a producer into a web byte stream. */
export const toReadableStream = (produce: ChunkProducer): ReadableStream<Uint8Array<ArrayBuffer>> => {
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
