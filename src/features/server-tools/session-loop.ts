/**
 * A streamed answer with server tools: one session over the loop's turns, each turn an ordinary session
 * (stream-session.ts: routing, fallbacks, BYOK, commit deadline) whose events are passed on as they come,
 * renumbered after the turns before it. A model's call of a server tool is shown as the tool's own item
 * (added when the model starts the call, done when the tool finished), never as a function call the client
 * would have to run. The first byte goes out when the first turn starts, as for any stream.
 */

import { InternalError, isGatewayError } from '../../core/errors'
import { itemEventFields, type ItemEvent } from '../../providers/events'
import type { OutputItem, OutputMessage } from '../../providers/types'
import type { ActiveStream } from '../../engine/active-streams'
import { ClientClosedError } from '../../engine/attempts'
import { toResponseFailure } from '../../engine/fallback'
import type { InferenceRequest } from '../../engine/request'
import { requestAbortSignal } from '../../engine/request-deadline'
import type { InferenceService } from '../../engine/service'
import { createSessionKit } from '../../engine/session-kit'
import type { EventSink, ResponseFailure, ResponseResult, ResponseSession, SessionEvent, StoppedUsage } from '../../engine/session-events'
import { openSession, shutdownFailure } from '../../engine/stream-session'
import { StreamSignal } from '../../engine/stream-signal'
import { citationsIn, withCitations } from './citations'
import type { ServerTool } from './contract'
import { ServerToolLoop, type PendingCall } from './loop'
import type { ServerToolPlan } from './plan'
import { nestedRunnerFor } from './whole-loop'

type TurnEnd = { how: 'finished'; result: ResponseResult } | { how: 'closed'; stopped?: StoppedUsage } | { how: 'broken'; error: unknown }

/**
 * Where a turn's items land in the response: after the earlier turns' items (`offset`), each one past the second
 * items of the server calls before it (a tool shown as two items, `ServerTool.followingItem`). Calls are opened in
 * output order, so an item's place is known by the time its events come.
 */
class TurnLayout {
  readonly #expanded: number[] = []
  constructor(readonly offset: number) {}
  /** A server call at `index` in the turn shows two items. */
  expand(index: number): void {
    this.#expanded.push(index)
  }
  at(index: number): number {
    return this.offset + index + this.#expanded.filter((expanded) => expanded < index).length
  }
}

/** Resolves once the first turn has content (or committed); rejects with the client's error as a single turn would. */
export const openServerToolSession = async (service: InferenceService, request: InferenceRequest, plan: ServerToolPlan): Promise<ResponseSession> => {
  // Fires when the client goes away, the consumer stops, or the gateway shuts down: every turn and tool run listens to it.
  const signal = new StreamSignal(request.signal)
  const turns = { ...request, signal }
  const loop = new ServerToolLoop(service, turns, plan, nestedRunnerFor(service, turns, plan))
  const first = await openSession(service, loop.turnRequest())

  const start = (sink: EventSink<SessionEvent>) => {
    let shutdownMessage: string | undefined
    let stopTurn: (() => StoppedUsage | undefined) | undefined
    let isBetweenTurns = false
    /** The client's items of the turns before the current one. */
    const output: OutputItem[] = []
    // The response as the first turn started it: its id and creation time hold for every turn.
    let started: Extract<SessionEvent, { type: 'started' }> | undefined
    let lastResult: ResponseResult | undefined

    const active: ActiveStream = {
      end(message) {
        if (kit.isEnded || shutdownMessage !== undefined) return
        shutdownMessage = message
        signal.abort(new Error(message))
        // A turn in flight ends itself; between turns nothing else would notice.
        if (isBetweenTurns) finishShutdown()
      },
    }
    const kit = createSessionKit(service, sink, { requestId: request.requestId, producer: 'server-tool stream', active })
    service.streams.add(active)

    // What the response used when its client went away: the finished turns and the tools, plus the running turn.
    const stoppedUsage = (turn: StoppedUsage | undefined): StoppedUsage | undefined => {
      if (!started) return undefined
      return turn ? { usage: loop.usage(turn.usage), isEstimated: turn.isEstimated } : { usage: loop.usage(), isEstimated: false }
    }
    const finish = (status: ResponseResult['status'], error: ResponseFailure | null, incompleteDetails: { reason: string } | null) => {
      if (kit.isEnded) return
      if (!started) return kit.end()
      const usage = loop.usage()
      kit.finish(usage, error, {
        ...(lastResult ?? { model: started.model, servedBy: started.servedBy, completedAt: started.createdAt }),
        id: started.id,
        createdAt: started.createdAt,
        status,
        output: [...output],
        usage,
        error,
        incompleteDetails,
      })
    }
    function finishShutdown() {
      finish('failed', shutdownFailure(shutdownMessage!), null)
    }

    /** Plays one turn into the sink, its items renumbered by `layout`; resolves when it ended. */
    const playTurn = (session: ResponseSession, layout: TurnLayout, isFirst: boolean) =>
      new Promise<TurnEnd>((resolve) => {
        let result: ResponseResult | undefined
        // The turn's server calls by their index in the turn: their events are replaced by the tool's item.
        const serverCalls = new Map<number, ServerTool>()
        const at = (index: number) => layout.at(index)
        const renumbered = <E extends ItemEvent>(event: E): E => {
          if (at(event.output_index) === event.output_index) return event
          // An event relayed as the upstream wrote it carries its JSON text; renumbered, it must be written anew.
          return { ...itemEventFields(event), output_index: at(event.output_index) } as E
        }
        const annotationsFor = (text: string) => citationsIn(text, loop.sources)
        const annotated = new Map<string, unknown[]>()

        const passItem = (event: ItemEvent): boolean => {
          switch (event.type) {
            case 'response.output_item.added': {
              const { item } = event
              const tool = item.type === 'function_call' ? loop.serverTool((item as { name?: string }).name) : undefined
              if (!tool) return sink.write(renumbered(event))
              serverCalls.set(event.output_index, tool)
              const itemId = loop.itemIdFor((item as { call_id: string }).call_id, tool)
              const isWritten = sink.write({ type: 'response.output_item.added', output_index: at(event.output_index), item: tool.pendingItem(itemId) })
              if (!tool.followingItem) return isWritten
              // Its second item is added at once, after the first: clients place items in the order they are added.
              layout.expand(event.output_index)
              return sink.write({ type: 'response.output_item.added', output_index: at(event.output_index) + 1, item: tool.followingItem.pending(itemId) })
            }
            case 'response.output_text.done': {
              const citations = annotationsFor(event.text)
              if (citations.length > 0) {
                annotated.set(`${event.output_index}:${event.content_index}`, citations)
                for (const [index, annotation] of citations.entries()) {
                  sink.write({
                    type: 'relayed',
                    event: {
                      type: 'response.output_text.annotation.added',
                      item_id: event.item_id,
                      output_index: at(event.output_index),
                      content_index: event.content_index,
                      annotation_index: index,
                      annotation,
                    },
                  })
                }
              }
              return sink.write(renumbered(event))
            }
            case 'response.content_part.done': {
              const citations = annotated.get(`${event.output_index}:${event.content_index}`)
              if (!citations || event.part.type !== 'output_text') return sink.write(renumbered(event))
              return sink.write({ ...itemEventFields(event), output_index: at(event.output_index), part: { ...event.part, annotations: [...event.part.annotations, ...citations] } })
            }
            default:
              break
          }
          if (serverCalls.has(event.output_index)) return true
          if (event.type === 'response.output_item.done' && event.item.type === 'message') {
            const message = event.item as OutputMessage
            const content = message.content.map((part, index) => {
              const citations = annotated.get(`${event.output_index}:${index}`)
              return citations && part.type === 'output_text' ? { ...part, annotations: [...part.annotations, ...citations] } : part
            })
            if (content.some((part, index) => part !== message.content[index])) {
              return sink.write({ ...itemEventFields(event), output_index: at(event.output_index), item: { ...message, content } })
            }
          }
          return sink.write(renumbered(event))
        }

        stopTurn = session.start({
          write(event) {
            switch (event.type) {
              case 'started':
                if (!isFirst) return true
                started = event
                return sink.write(event)
              case 'debug':
                // The upstream body is echoed for the first turn only, as the spec's first chunk.
                return isFirst ? sink.write(event) : true
              case 'keep_alive':
                return sink.write(event)
              case 'usage':
              case 'error':
                // The loop reports its own, over every turn.
                return true
              case 'finished':
                result = event.result
                return true
              case 'relayed': {
                const index = event.event.output_index
                if (typeof index !== 'number' || at(index) === index) return sink.write(event)
                return sink.write({ type: 'relayed', event: { ...event.event, output_index: at(index) } })
              }
              default:
                return passItem(event)
            }
          },
          ready: () => sink.ready(),
          close: (stopped) => resolve(result ? { how: 'finished', result } : stopped ? { how: 'closed', stopped } : { how: 'closed' }),
          fail: (error) => resolve({ how: 'broken', error }),
        })
      })

    /** The second item of a call shown as two (added with the first), done right after it. */
    const writeFollowing = (index: number, item: OutputItem | undefined) => {
      if (item) sink.write({ type: 'response.output_item.done', output_index: index + 1, item })
    }

    /** Shows the tool's events of a call as it runs and when it ended. */
    const callHooks = (layout: TurnLayout) => {
      const event = (pending: PendingCall, type: string) =>
        sink.write({ type: 'relayed', event: { type, item_id: pending.call.itemId, output_index: layout.at(pending.turnIndex) } })
      return {
        onStart: (pending: PendingCall) => pending.tool.startEvents?.forEach((type) => event(pending, type)),
        onProgress: (pending: PendingCall, progress: { type: string }) => event(pending, progress.type),
        onDone: (pending: PendingCall, items: readonly OutputItem[]) => {
          pending.tool.endEvents?.forEach((type) => event(pending, type))
          const index = layout.at(pending.turnIndex)
          sink.write({ type: 'response.output_item.done', output_index: index, item: items[0]! })
          writeFollowing(index, items[1])
        },
      }
    }

    const run = async () => {
      const tools = requestAbortSignal(signal, request.deadline)
      // Turns after the first are held before they are sent, each with what the loop spent so far (spend.ts).
      const { steps } = loop
      try {
        let session = first
        for (let isFirst = true; ; isFirst = false) {
          const layout = new TurnLayout(output.length)
          const end = await playTurn(session, layout, isFirst)
          stopTurn = undefined
          if (end.how === 'broken') throw end.error
          if (end.how === 'closed') return shutdownMessage === undefined ? kit.end(stoppedUsage(end.stopped)) : finishShutdown()
          const { result } = end
          lastResult = result
          isBetweenTurns = true
          kit.keepAlive('always')
          const decision = loop.afterTurn({ output: result.output, status: result.status, incompleteDetails: result.incompleteDetails, usage: result.usage })
          // What the turn's text was annotated with as it streamed: the pages found before it.
          const citable = [...loop.sources]
          let ran: Map<PendingCall, OutputItem[]>
          try {
            ran = decision.calls.length > 0 ? await loop.runCalls(decision.calls, tools.signal, callHooks(layout)) : new Map()
          } catch (error) {
            // The deadline stopped the tools: the response fails with the turns before this one, as a failed turn would.
            if (signal.aborted || !request.deadline.isPassed) throw error
            return finish('failed', toResponseFailure(request.deadline.error()), null)
          }
          const items = withCitations(loop.clientItems(result.output, ran), citable)
          // Server calls that never ran (a turn with tools disabled, a failed turn) still end their item.
          for (const [index, item] of result.output.entries()) {
            const tool = item.type === 'function_call' ? loop.serverTool((item as { name?: string }).name) : undefined
            if (!tool || [...ran.keys()].some((pending) => pending.turnIndex === index)) continue
            const at = layout.at(index)
            sink.write({ type: 'response.output_item.done', output_index: at, item: items[at - layout.offset]! })
            if (tool.followingItem) writeFollowing(at, items[at - layout.offset + 1])
          }
          output.push(...items)
          if (result.status === 'failed') return finish('failed', result.error, null)
          if (decision.next === 'end') return finish(result.status, null, result.incompleteDetails)
          try {
            const turn = loop.turnRequest()
            await steps.before(turn, loop.spentAfterFirstTurn())
            session = await openSession(service, turn)
          } catch (error) {
            if (error instanceof ClientClosedError || signal.aborted) throw error
            return finish('failed', toResponseFailure(isGatewayError(error) ? error : new InternalError('Internal server error')), null)
          }
          // Shut down or stopped while the next turn was opening: its upstream was aborted with the signal.
          if (kit.isEnded) return
          kit.keepAlive('off')
          isBetweenTurns = false
        }
      } catch (error) {
        if (kit.isEnded) return
        if (shutdownMessage !== undefined) return finishShutdown()
        if (error instanceof ClientClosedError || signal.aborted) return kit.end(stoppedUsage(undefined))
        throw error
      } finally {
        tools.release()
        steps.end()
      }
    }

    // A bug, not an upstream failure: the client must not take what it got for a whole answer.
    kit.run(run, (error) => signal.abort(error))

    // The consumer went away: stop the turn and every tool run at once. What was used is the finished turns'
    // usage and the tools' cost, plus what the stopped turn used (its usage or the observer's estimate of it).
    return kit.stopper(() => {
      signal.abort(new ClientClosedError())
      return stoppedUsage(stopTurn?.()) ?? { usage: loop.usage(), isEstimated: false }
    })
  }

  return { request: request.body, overheadMs: first.overheadMs, start }
}
