/**
 * A chat turn with a running intern: the runtime answers with a Responses event stream; on the way
 * out the pause tool gets its public name, and once the turn completes the new input and the
 * intern's output join the intern's conversation, so the next turn (e.g. the caller's answer to
 * `service.provide_input`) continues it.
 */

import type { JsonValue } from '../storage/contract'
import type { Repositories } from '../repositories'
import type { ConversationSession } from '../repositories/interns'
import { trimHistory, type HistoryLimits } from './history'
import { UPSTREAM_PROVIDE_INPUT_TOOL } from './in-process'
import { PROVIDE_INPUT_TOOL } from './runtime'

const renameTool = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(renameTool)
  if (!value || typeof value !== 'object') return value
  const record = value as Record<string, unknown>
  const renamed: Record<string, unknown> = {}
  for (const [key, entry] of Object.entries(record)) {
    renamed[key] = key === 'name' && entry === UPSTREAM_PROVIDE_INPUT_TOOL ? PROVIDE_INPUT_TOOL : renameTool(entry)
  }
  return renamed
}

/**
 * Rewrites an SSE body event by event (one parse and one serialisation per event), and calls
 * `onFinal` with the final response object of a completed or incomplete turn.
 */
export const rewriteChatStream = (
  body: ReadableStream<Uint8Array>,
  onFinal: (response: { output: JsonValue[]; model: string }) => Promise<void>,
): ReadableStream<Uint8Array> => {
  const decoder = new TextDecoder()
  const encoder = new TextEncoder()
  let buffer = ''
  const rewriteBlock = async (block: string): Promise<string> => {
    const dataLine = block.split('\n').find((line) => line.startsWith('data: {'))
    if (!dataLine) return block
    const event = renameTool(JSON.parse(dataLine.slice(6))) as { type: string; response?: { output: JsonValue[]; model: string } }
    if ((event.type === 'response.completed' || event.type === 'response.incomplete') && event.response) await onFinal(event.response)
    return `event: ${event.type}\ndata: ${JSON.stringify(event)}`
  }
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async transform(chunk, controller) {
        buffer += decoder.decode(chunk, { stream: true })
        let boundary = buffer.indexOf('\n\n')
        while (boundary >= 0) {
          const block = buffer.slice(0, boundary)
          buffer = buffer.slice(boundary + 2)
          controller.enqueue(encoder.encode(`${await rewriteBlock(block)}\n\n`))
          boundary = buffer.indexOf('\n\n')
        }
      },
      flush(controller) {
        if (buffer) controller.enqueue(encoder.encode(buffer))
      },
    }),
  )
}

/**
 * Output items are valid input items: the turn's input and output become the conversation's next
 * items, and the oldest go once the conversation is over `limits` (history.ts). A turn of another
 * `session` than the stored one starts the conversation afresh, and the session keeps its run's approval mode.
 */
export const appendTurn = (
  repositories: Repositories,
  internId: string,
  input: JsonValue[],
  output: JsonValue[],
  limits: HistoryLimits,
  session?: ConversationSession,
) => {
  const turn = [
    ...input,
    // Output items keep their shape except transient status, which input items do not need.
    ...output.map((item) => {
      if (!item || typeof item !== 'object' || Array.isArray(item)) return item
      const { status: _status, ...rest } = item as Record<string, JsonValue>
      return rest
    }),
  ]
  return repositories.interns.conversations.update(internId, (history) => trimHistory([...history, ...turn], history.length, limits), session)
}
