/**
 * The internal contract of a server tool: a tool the gateway runs itself between model turns
 * (docs/decisions.md, "Server tools"). The model sees it as an ordinary function tool; the client sees
 * the tool's own output item (`service:datetime`, `web_search_call`, …) where the model's call was.
 */

import type { FunctionCallItem, FunctionCallOutputItem, FunctionTool, InputItem, OutputItem } from '../../providers/types'
import type { BilledUsage } from '../../engine/billing'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { InferenceService } from '../../engine/service'
import type { ResponseSession } from '../../engine/session-events'
import type { NestedRunner } from './nesting'

export { ServerToolFailure, ServerToolRefusal } from './tool-errors'

/** One call the model made of a server tool. */
export interface ServerToolCall {
  /** The model's `call_id`: the result goes back under it. */
  callId: string
  /** The id of the item the client sees for this call. */
  itemId: string
  /** The model's arguments, parsed from JSON (a malformed text never reaches a tool). */
  arguments: Record<string, unknown>
}

/** What a tool run needs beyond its call. */
export interface ServerToolContext {
  service: InferenceService
  /** Fires when the client went away (or the gateway is shutting down): stop at once. */
  signal: AbortSignal
  requestId: string
  /** Whom the call runs for (an operator's executor may keep one sandbox per workspace). */
  caller: { accountId: string; workspaceId: string }
  /** Reports progress a stream shows while the call runs (`response.web_search_call.searching`). */
  progress(event: { type: string }): void
  /** Runs a model call of the tool's own (advisor, subagent) through the engine, for this request; its worst case is held first. */
  nested: NestedRunner
  /**
   * Holds a price in USD the call is about to spend (a search engine's price per request) on the request's spend
   * limits; rejects with a 402 `PaymentRequiredError` when a limit would be passed, and the call is then not run.
   */
  holdSpend(price: number): Promise<void>
  /**
   * The conversation as the model saw it when it made the call: the caller's input, then every turn's items and
   * the results of earlier server calls (server calls as the function calls the model made).
   */
  transcript: readonly InputItem[]
  /** Runs other models on the request's behalf (`service:fusion`'s panel); present when a tool of the request needs it. */
  subRuns?: SubRuns
}

/** Other models' runs for the request's caller: same workspace, BYOK keys and provider preferences. */
export interface SubRuns {
  /** The caller's request, whose conversation the other models answer. */
  readonly body: ResponsesRequestBody
  /** The model the caller's request runs on (its first attempt's), which a tool's nested step defaults to. */
  readonly model: string
  /** Whether every endpoint `model` may be sent to takes structured output (`text.format`). */
  takesStructuredOutput(model: string): boolean
  /** Whether the caller can reach `model` (a key for one of its providers, the operator's or their own). */
  isReachable(model: string): boolean
  /** Opens `body`'s streamed run on `model`; its cost is the calling tool's to report (`ServerToolOutcome.cost`). */
  open(body: ResponsesRequestBody, model: string): Promise<ResponseSession>
}

/** A page a final answer may cite (`url_citation` annotations). */
export interface CitableSource {
  url: string
  title: string
}

/** What one run of a server tool gives back. */
export interface ServerToolOutcome {
  /** What the model reads as the call's result. */
  output: string
  /** The item the client sees in place of the call, finished. */
  item: OutputItem
  /** The second item of a tool shown as two (`ServerTool.followingItem`), finished. */
  followingItem?: OutputItem
  /** Requests sent to a web search engine (`usage.server_tool_use_details.web_search_requests`). */
  webSearchRequests?: number
  /** What the run cost in dollars (a search engine's price per request), added to the response's cost. */
  cost?: number
  /**
   * The usage of model calls the tool made (an advisor's answer), priced at the endpoints that served them: added
   * to the response's usage as a turn's is, and to what `stop_server_tools_when` counts.
   */
  usage?: BilledUsage
  sources?: CitableSource[]
}

/** The call and result pair an item of a server tool stands for in a later request's input. */
export const historyPair = (item: Record<string, unknown>, name: string, args: Record<string, unknown>, output: string): [FunctionCallItem, FunctionCallOutputItem] => {
  const callId = historyCallId(item)
  return [
    { type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args) },
    { type: 'function_call_output', call_id: callId, output },
  ]
}

/** The call id an item of a server tool stands for in history: the model's, when the item keeps it. */
export const historyCallId = (item: Record<string, unknown>): string =>
  typeof item.call_id === 'string' && item.call_id !== '' ? item.call_id : `call_${typeof item.id === 'string' ? item.id : 'server_tool'}`

/** A server tool as one request configured it; built per request, so it may count its own uses. */
export interface ServerTool {
  /** The tool's type in the request (`service:datetime`). */
  readonly type: string
  /** Starts the ids of the items the client sees (`ws` for `web_search_call`). */
  readonly itemIdPrefix: string
  /** The type of the items the client sees (`service:datetime`, `web_search_call`). */
  readonly itemType: string
  /** What the upstream model sees: a function tool named `functionName`. */
  readonly definition: FunctionTool & { name: string }
  /** The item a stream shows while the call runs (`output_item.added`). */
  pendingItem(itemId: string): OutputItem
  /** The item the client sees when the call failed or was not run; `message` is safe to show. */
  failedItem(itemId: string, message: string, details?: Record<string, unknown>): OutputItem
  /**
   * Set for a tool the client sees as two items, its call and then its result (OpenAI's `tool_search_call` and
   * `tool_search_output`): the type of the second; the second as a stream adds it with the first (its id derived
   * from the first's, as `ServerToolOutcome.followingItem` must keep it); the second for a call that failed or was
   * not run.
   */
  readonly followingItem?: {
    readonly type: string
    pending(itemId: string): OutputItem
    failed(itemId: string, callId: string, message: string): OutputItem
  }
  /** Events a stream shows as the call starts (after `output_item.added`) and ends (before `output_item.done`). */
  readonly startEvents?: readonly string[]
  readonly endEvents?: readonly string[]
  /**
   * A client's item of this tool sent back in a later request's input, as the call and result the model saw:
   * the conversation goes on without the client knowing how the gateway spoke to the model.
   */
  toHistory(item: Record<string, unknown>): InputItem[]
  /** Runs the call. Throws `ServerToolRefusal` for a call it will not run; any other throw is a failed run. */
  run(call: ServerToolCall, context: ServerToolContext): Promise<ServerToolOutcome>
}
