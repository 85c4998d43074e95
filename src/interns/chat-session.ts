/**
 * A chat turn read from the session's events (the built-in runtime's way): the pause tool gets its
 * public name as each event passes, and the turn joins the conversation from the `finished` event,
 * before the caller sees the turn end.
 */

import type { SessionObserver } from '../engine/observe'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import type { SessionEvent } from '../engine/session-events'
import type { OutputItem } from '../providers/types'
import { UPSTREAM_PROVIDE_INPUT_TOOL } from './in-process'
import { PROVIDE_INPUT_TOOL } from './runtime'

const renameItem = (item: OutputItem) => {
  if (item.type === 'function_call' && item.name === UPSTREAM_PROVIDE_INPUT_TOOL) item.name = PROVIDE_INPUT_TOOL
}

const renamePauseTool = (event: SessionEvent) => {
  switch (event.type) {
    case 'response.output_item.added':
    case 'response.output_item.done':
      return renameItem(event.item)
    case 'response.function_call_arguments.done':
      if (event.name === UPSTREAM_PROVIDE_INPUT_TOOL) event.name = PROVIDE_INPUT_TOOL
      return
    // The final output holds the items `output_item.done` carried, renamed already.
  }
}

/** `storeTurn` runs for a completed or incomplete turn; a failed one leaves the conversation as it was. */
// The tools the response echoes are the ones the caller knows.
const publicRequest = (request: ResponsesRequestBody): ResponsesRequestBody =>
  request.tools
    ? { ...request, tools: request.tools.map((tool) => (tool.type === 'function' && tool.name === UPSTREAM_PROVIDE_INPUT_TOOL ? { ...tool, name: PROVIDE_INPUT_TOOL } : tool)) }
    : request

export const internChatObserver = (storeTurn: (output: OutputItem[]) => Promise<void>): SessionObserver => ({
  request: publicRequest,
  onEvent: renamePauseTool,
  beforeFinished: (result) => (result.status === 'failed' ? Promise.resolve() : storeTurn(result.output)),
})
