/**
 * The server-tool loop's state and decisions, shared by the whole and the streamed answer (whole-loop.ts,
 * session-loop.ts): what each turn sends, what a turn's output asks for, running the calls, and when
 * to stop. Turns themselves run through the ordinary engine (routing, fallbacks and BYOK per turn).
 */

import { randomHex } from '../../core/crypto'
import { PaymentRequiredError } from '../../core/errors'
import type { ServerToolCalled } from '../../core/telemetry'
import type { BilledUsage } from '../../engine/billing'
import type { FunctionCallOutputItem, InputItem, OutputFunctionCall, OutputItem } from '../../providers/types'
import type { InferenceRequest } from '../../engine/request'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { InferenceService } from '../../engine/service'
import { createStepSpend, type StepSpend } from '../../engine/spend'
import { ServerToolFailure, ServerToolRefusal, type CitableSource, type ServerTool, type ServerToolCall, type ServerToolOutcome } from './contract'
import type { NestedRunner } from './nesting'
import type { ServerToolPlan } from './plan'
import { SUB_RUNS } from './request-server-tools'
import { finishReasonsOf, firingCondition } from './stop'
import { sumLoopUsage, type LoopUsage } from './usage'

/** What one turn produced, whole or streamed. */
export interface TurnResult {
  /** The model's items as the upstream sent them (server calls still as function calls). */
  output: OutputItem[]
  status: 'completed' | 'incomplete' | 'failed'
  incompleteDetails: { reason: string } | null
  usage: BilledUsage | null
}

/** A server call of the last turn, to be run. */
export interface PendingCall {
  tool: ServerTool
  call: ServerToolCall
  /** The model's function call (goes back upstream with its result). */
  modelItem: OutputFunctionCall
  /** Its position among the turn's items. */
  turnIndex: number
  /** Set once the argument text was not JSON: the call is answered with this, never run. */
  argumentError?: string
}

/** What comes after a turn. */
export type TurnDecision =
  /** Run `calls`, then make another turn (`isFinal`: with tool calls disabled). */
  | { next: 'turn'; calls: PendingCall[]; isFinal: boolean }
  /** Run `calls` (if any), and the response is complete. */
  | { next: 'end'; calls: PendingCall[] }

export interface CallHooks {
  /** The call starts running (a stream shows its start events). */
  onStart?(pending: PendingCall): void
  /** The call ended: `items` are what the client sees (one, or two for a tool with a following item). */
  onDone?(pending: PendingCall, items: readonly OutputItem[]): void
  /** Progress the tool reports while it runs. */
  onProgress?(pending: PendingCall, event: { type: string }): void
}

const asItems = (input: ResponsesRequestBody['input']): InputItem[] =>
  typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : (input as InputItem[])

const isFunctionCall = (item: OutputItem): item is OutputFunctionCall => item.type === 'function_call'

const parseArguments = (text: string): Record<string, unknown> | string => {
  if (text.trim() === '') return {}
  try {
    const value: unknown = JSON.parse(text)
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
    return 'the arguments must be a JSON object'
  } catch {
    return 'the arguments are not valid JSON'
  }
}

/** What the client sees of a call that failed or was not run: the tool's failed item, and its following one if it has one. */
const failedItems = (tool: ServerTool, call: Pick<ServerToolCall, 'callId' | 'itemId'>, message: string, details?: Record<string, unknown>): OutputItem[] => {
  const item = tool.failedItem(call.itemId, message, details)
  if (!tool.followingItem) return [item]
  // Both items name the model's call, so the pair reads back as one call and its result.
  return [{ ...item, call_id: call.callId }, tool.followingItem.failed(call.itemId, call.callId, message)]
}

/** The runs of other models the request's tools may open (`service:fusion`), when it has them. */
const subRunsOf = (request: InferenceRequest) => {
  const subRuns = SUB_RUNS.get(request)
  return subRuns ? { subRuns } : {}
}

const limitMessage = (max: number) => `Not run: this response reached its limit of ${max} server-tool call${max === 1 ? '' : 's'}. Answer with what you have.`

export class ServerToolLoop {
  readonly #request: InferenceRequest
  readonly #plan: ServerToolPlan
  readonly #service: InferenceService
  readonly #nested: NestedRunner
  /** Items sent upstream after the caller's input: each turn's output and the results of its server calls. */
  readonly #history: InputItem[] = []
  readonly #turnUsages: BilledUsage[] = []
  readonly #calledTools = new Set<string>()
  readonly #itemIds = new Map<string, string>()
  readonly #sources: CitableSource[] = []
  /** The caller's input as every turn sends it: items of the server tools in it as the calls and results they stand for. */
  #input: InputItem[] | undefined
  #steps = 0
  /** The first turn's usage, which the request's own reservation holds. */
  #firstTurnUsage: BilledUsage | undefined
  #toolCost = 0
  #requested = 0
  #executed = 0
  #scheduled = 0
  #webSearchRequests = 0
  #isFinal = false

  /** Holds each turn after the first before it is sent, and each priced call before it runs (spend.ts). */
  readonly steps: StepSpend

  constructor(service: InferenceService, request: InferenceRequest, plan: ServerToolPlan, nested: NestedRunner) {
    this.#service = service
    this.#request = request
    this.#plan = plan
    this.#nested = nested
    this.steps = createStepSpend(service, request)
  }

  get isFinalTurn(): boolean {
    return this.#isFinal
  }

  /** Sources the server tools found, for citations in the final answer. */
  get sources(): readonly CitableSource[] {
    return this.#sources
  }

  /** The server tool a function name stands for, if it stands for one. */
  serverTool(name: string | undefined): ServerTool | undefined {
    return name === undefined ? undefined : this.#plan.byFunctionName.get(name)
  }

  /** The id of the item the client sees for a call, the same however often it is asked for. */
  itemIdFor(callId: string, tool: ServerTool): string {
    let id = this.#itemIds.get(callId)
    if (!id) this.#itemIds.set(callId, (id = `${tool.itemIdPrefix}_${randomHex(16)}`))
    return id
  }

  /** The request for the next turn: the conversation so far, every tool as the upstream understands it. */
  turnRequest(): InferenceRequest {
    const body = this.#request.body
    this.#input ??= asItems(body.input).flatMap((item) => {
      const tool = typeof item.type === 'string' ? this.#plan.byItemType.get(item.type) : undefined
      return tool ? tool.toHistory(item as Record<string, unknown>) : [item]
    })
    // Deferred tools found by `service:tool_search` (in this response or, through the input, an earlier one).
    const found = this.#plan.deferredTools?.loaded() ?? []
    const turnBody: ResponsesRequestBody = {
      ...body,
      input: [...this.#input, ...this.#history] as ResponsesRequestBody['input'],
      tools: [...this.#plan.upstreamTools, ...found] as ResponsesRequestBody['tools'],
      // spec stop_server_tools_when: the last turn is made with tool calls disabled.
      ...(this.#isFinal ? { tool_choice: 'none' as const } : {}),
    }
    return { ...this.#request, body: turnBody }
  }

  /** The conversation so far as the model saw it: the request's instructions, its input, every turn since. */
  #transcript(): InputItem[] {
    const { instructions } = this.#request.body
    return [...(instructions ? [{ type: 'message' as const, role: 'system' as const, content: instructions }] : []), ...(this.#input ?? []), ...this.#history]
  }

  /** Records a finished turn and decides what comes next. */
  afterTurn(turn: TurnResult): TurnDecision {
    if (this.#steps++ === 0) this.#firstTurnUsage = turn.usage ?? undefined
    if (turn.usage) this.#turnUsages.push(turn.usage)
    const calls: PendingCall[] = []
    let hasClientCalls = false
    for (const [turnIndex, item] of turn.output.entries()) {
      if (!isFunctionCall(item)) continue
      const tool = this.serverTool(item.name)
      if (!tool) {
        hasClientCalls = true
        continue
      }
      const parsed = parseArguments(item.arguments)
      calls.push({
        tool,
        modelItem: item,
        turnIndex,
        call: { callId: item.call_id, itemId: this.itemIdFor(item.call_id, tool), arguments: typeof parsed === 'string' ? {} : parsed },
        ...(typeof parsed === 'string' ? { argumentError: parsed } : {}),
      })
      this.#calledTools.add(tool.type).add(item.name)
    }
    this.#requested += calls.length
    // The provider's own searches (`engine: "native"`): each `web_search_call` it ran is one search request.
    this.#webSearchRequests += turn.output.filter((item) => item.type === 'web_search_call' && item.status !== 'failed').length
    this.#history.push(...(turn.output as InputItem[]))
    // A turn made with tools disabled that calls one anyway: nothing runs, and the response ends here.
    if (this.#isFinal || calls.length === 0 || turn.status === 'failed') return { next: 'end', calls: [] }
    if (hasClientCalls) return { next: 'end', calls }
    const stop = firingCondition(this.#plan.stopWhen, {
      steps: this.#steps,
      calledTools: this.#calledTools,
      totalTokens: this.#turnUsages.reduce((sum, usage) => sum + usage.total_tokens, 0),
      cost: this.#turnUsages.reduce((sum, usage) => sum + usage.cost, this.#toolCost),
      finishReasons: finishReasonsOf(turn.status, turn.incompleteDetails?.reason, true),
    })
    const runnable = calls.filter((pending) => pending.argumentError === undefined).length
    const isOverLimit = this.#scheduled + runnable >= this.#plan.maxToolCalls
    this.#isFinal = stop !== undefined || isOverLimit
    return { next: 'turn', calls, isFinal: this.#isFinal }
  }

  /** Runs the calls of a turn (at the same time unless `parallel_tool_calls` is false) and records their results. */
  async runCalls(calls: readonly PendingCall[], signal: AbortSignal, hooks: CallHooks = {}): Promise<Map<PendingCall, OutputItem[]>> {
    const items = new Map<PendingCall, OutputItem[]>()
    // Slots are given in the model's order before anything runs, so the limit cuts the same calls either way.
    const runs = calls.map((pending) => {
      const isAllowed = pending.argumentError === undefined && this.#scheduled < this.#plan.maxToolCalls
      if (isAllowed) this.#scheduled++
      return async () => {
        hooks.onStart?.(pending)
        const { output, items: shown } = isAllowed
          ? await this.#runOne(pending, signal, hooks)
          : { output: pending.argumentError ? `Not run: ${pending.argumentError}.` : limitMessage(this.#plan.maxToolCalls), items: failedItems(pending.tool, pending.call, pending.argumentError ?? 'limit reached') }
        items.set(pending, shown)
        hooks.onDone?.(pending, shown)
        return output
      }
    })
    let outputs: string[] = []
    if (this.#plan.isParallel) outputs = await Promise.all(runs.map((run) => run()))
    else for (const run of runs) outputs.push(await run())
    for (const [index, pending] of calls.entries()) {
      const result: FunctionCallOutputItem = { type: 'function_call_output', call_id: pending.call.callId, output: outputs[index]! }
      this.#history.push(result)
    }
    return items
  }

  async #runOne(pending: PendingCall, signal: AbortSignal, hooks: CallHooks): Promise<{ output: string; items: OutputItem[] }> {
    const { tool, call } = pending
    const { telemetry } = this.#service
    const startedAt = telemetry.serverToolCalled ? performance.now() : 0
    const called = (ended: ServerToolCalled['outcome']) =>
      telemetry.serverToolCalled?.({ requestId: this.#request.requestId, tool: tool.type, outcome: ended, durationMs: Math.round(performance.now() - startedAt) })
    let outcome: ServerToolOutcome
    try {
      outcome = await tool.run(call, {
        service: this.#service,
        signal,
        requestId: this.#request.requestId,
        caller: { accountId: this.#request.spend.account.id, workspaceId: this.#request.spend.workspace.id },
        progress: (event) => hooks.onProgress?.(pending, event),
        nested: this.#nested,
        holdSpend: (price) => this.steps.beforeCall(price),
        transcript: this.#transcript(),
        ...subRunsOf(this.#request),
      })
    } catch (error) {
      if (signal.aborted) throw error
      // A call a spend limit cannot hold is not run either: the model reads why, and the next turn's hold ends the loop.
      if (error instanceof ServerToolRefusal || error instanceof PaymentRequiredError) {
        called('refused')
        return { output: `Not run: ${error.message}`, items: failedItems(tool, call, error.message) }
      }
      called('failed')
      this.#executed++
      // The model reads why its call failed and may try another way; the cause stays in the log.
      const isExpected = error instanceof ServerToolFailure
      const message = isExpected ? error.message : 'the tool failed'
      if (!isExpected) this.#service.logger.warn('server tool failed', { requestId: this.#request.requestId, tool: tool.type, error })
      return { output: `Error: ${message}`, items: failedItems(tool, call, message, isExpected ? error.details : undefined) }
    }
    called('ok')
    this.#executed++
    this.#toolCost += outcome.cost ?? 0
    // A nested model call's tokens and cost count as a turn's: in the response's usage and for the stop conditions.
    if (outcome.usage) this.#turnUsages.push(outcome.usage)
    this.#webSearchRequests += outcome.webSearchRequests ?? 0
    if (outcome.sources) this.#sources.push(...outcome.sources)
    return { output: outcome.output, items: outcome.followingItem ? [outcome.item, outcome.followingItem] : [outcome.item] }
  }

  /**
   * A turn's items as the client sees them: each server call replaced by its tool's item, at the same
   * position; a server call that never ran (a turn with tools disabled) by its tool's failed item.
   */
  clientItems(output: readonly OutputItem[], ran: ReadonlyMap<PendingCall, readonly OutputItem[]>): OutputItem[] {
    const byCallId = new Map([...ran].map(([pending, items]) => [pending.call.callId, items]))
    return output.flatMap((item) => {
      if (!isFunctionCall(item)) return [item]
      const tool = this.serverTool(item.name)
      if (!tool) return [item]
      return byCallId.get(item.call_id) ?? failedItems(tool, { callId: item.call_id, itemId: this.itemIdFor(item.call_id, tool) }, 'not run: the server-tool loop had ended')
    })
  }

  /**
   * Every turn's usage and the tools' cost, with `server_tool_use_details`; with `unfinished`, the usage of a
   * turn the client stopped as well.
   */
  /** What the loop spent beyond its first turn (later turns, nested calls, tools): what a later turn's hold covers. */
  spentAfterFirstTurn(): LoopUsage {
    return sumLoopUsage(
      this.#turnUsages.filter((usage) => usage !== this.#firstTurnUsage),
      this.#toolCost,
      { tool_calls_requested: this.#requested, tool_calls_executed: this.#executed, web_search_requests: this.#webSearchRequests },
    )
  }

  usage(unfinished?: BilledUsage): LoopUsage {
    return sumLoopUsage(unfinished ? [...this.#turnUsages, unfinished] : this.#turnUsages, this.#toolCost, {
      tool_calls_requested: this.#requested,
      tool_calls_executed: this.#executed,
      web_search_requests: this.#webSearchRequests,
    })
  }
}
