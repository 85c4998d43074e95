/**
 * A background run's events as server-sent events (docs/decisions.md, Background runs): those after `starting_after`,
 * then the run's new ones as they come until it ends, whichever process runs it. A run of this process is followed
 * event by event from its copy in memory; one of another process from the store, read again every flush interval.
 */

import type { ChunkProducer, ChunkSink } from '../core/event-stream'
import { unrefSleep } from '../core/periodic'
import { sseReply } from '../formats/shared/reply'
import { TERMINAL, type BackgroundRuns } from '../services/background-runs'
import type { JsonObject } from '../storage/contract'

const DONE = 'data: [DONE]\n\n'

const encode = (event: JsonObject) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`

const followRun = (background: BackgroundRuns, id: string, startingAfter: number): ChunkProducer => (sink: ChunkSink) => {
  let isStopped = false
  let last = startingAfter
  let nextChunk = 0
  let runId: string | undefined
  const send = async (events: JsonObject[]) => {
    for (const event of events) {
      if (isStopped) return
      last = event.sequence_number as number
      if (!sink.write(encode(event))) await sink.ready()
    }
  }
  const follow = async () => {
    while (!isStopped) {
      const local = background.local.get(id)
      if (local && !local.isEnded) {
        const changed = local.changed()
        await send(local.events.filter((event) => (event.sequence_number as number) > last))
        if (!local.isEnded) await changed
        continue
      }
      const record = await background.get(id)
      if (!record) break
      // A run taken over meanwhile numbers its events from 0 again: its chunks are read from the first.
      if (record.runId !== runId) nextChunk = 0
      runId = record.runId
      const read = await background.eventsAfter(record, last, nextChunk)
      nextChunk = read.nextChunk
      await send(read.events)
      if (TERMINAL.has(record.status)) break
      await unrefSleep(background.settings.flushIntervalMs)
    }
    if (!isStopped) {
      sink.write(DONE)
      sink.close()
    }
  }
  follow().catch((error: unknown) => sink.fail(error))
  return () => {
    isStopped = true
  }
}

/** The SSE reply that replays and follows the background run `id`. */
export const backgroundStreamReply = (background: BackgroundRuns, id: string, startingAfter: number) => sseReply(followRun(background, id, startingAfter), 0)
