/**
 * Which server tools a request asked for, checked before anything is sent: each `service:*` tool is one
 * this gateway runs, enabled for the workspace, with valid parameters, or the request gets a 400 naming it
 * (docs/decisions.md, "Server tools"). Never a silent drop.
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../core/errors'
import { parseInput } from '../../core/validation'
import type { Tool } from '../../providers/types'
import { MAX_TOOL_CALLS_MAX, type ResponsesRequestBody } from '../request.schemas'
import type { InferenceService } from '../service'
import type { ServerTool } from './contract'
import { DatetimeToolSchema, datetimeTool } from './datetime'
import type { StopCondition } from './stop'
import { WebFetchToolSchema, webFetchTool } from './web-fetch'
import { WebSearchToolSchema, webSearchTool } from './web-search'

/** What a request's server tools are, and how its loop is bounded. */
export interface ServerToolPlan {
  /** Server tools by the function name the model calls them by. */
  byFunctionName: ReadonlyMap<string, ServerTool>
  /** The same tools by the type of the items the client sees, to read them back from a later request's input. */
  byItemType: ReadonlyMap<string, ServerTool>
  /** The tools every turn sends: the caller's own (in their order) and the server tools as function tools. */
  upstreamTools: Tool[]
  /** Server-tool calls the loop runs at most (`max_tool_calls`, or the spec's ceiling when stop conditions rule). */
  maxToolCalls: number
  stopWhen: readonly StopCondition[]
  /** Whether the calls of one turn run at the same time (`parallel_tool_calls`, default true). */
  isParallel: boolean
}

type ToolBuilder = (tool: unknown, index: number, service: InferenceService) => ServerTool

/** Validates one tool object with `schema`, naming a bad field by its place in the body (`body.tools.2.parameters.timezone`). */
export const parseTool = <S extends v.GenericSchema<unknown, unknown>>(schema: S, tool: unknown, index: number): v.InferOutput<S> =>
  (parseInput(v.object({ tools: v.object({ [index]: schema }) }), { tools: { [index]: tool } }, 'body') as { tools: Record<number, v.InferOutput<S>> }).tools[index]!

const SERVER_TOOLS: Record<string, ToolBuilder> = {
  'service:datetime': (tool, index) => datetimeTool(parseTool(DatetimeToolSchema, tool, index)),
  'service:web_fetch': (tool, index) => webFetchTool(parseTool(WebFetchToolSchema, tool, index)),
  'service:web_search': (tool, index, service) => webSearchTool(parseTool(WebSearchToolSchema, tool, index), { where: `body.tools.${index}`, prefix: 'parameters.', label: 'service:web_search' }, service),
}

export const SERVER_TOOL_PREFIX = 'service:'

/** The server-tool types this gateway runs. */
export const SUPPORTED_SERVER_TOOLS = Object.keys(SERVER_TOOLS)

// An entry of `disabled_server_tools` may name the type with or without its prefix.
const isDisabled = (type: string, disabled: readonly string[] | null) =>
  disabled !== null && disabled.some((entry) => entry === type || `${SERVER_TOOL_PREFIX}${entry}` === type)

/**
 * The request's server-tool plan, or `undefined` when it has no server tools (then it runs as a single
 * turn, exactly as before). Throws `InvalidRequestError` naming the tool or field at fault.
 */
export const planServerTools = (service: InferenceService, body: ResponsesRequestBody, disabled: readonly string[] | null): ServerToolPlan | undefined => {
  const tools = (body.tools ?? []) as Tool[]
  if (!tools.some((tool) => tool.type.startsWith(SERVER_TOOL_PREFIX))) return undefined
  const byFunctionName = new Map<string, ServerTool>()
  const seen = new Set<string>()
  const clientNames = new Set(tools.flatMap((tool) => (tool.type === 'function' ? [(tool as { name: string }).name] : [])))
  const upstreamTools: Tool[] = []
  for (const [index, tool] of tools.entries()) {
    if (!tool.type.startsWith(SERVER_TOOL_PREFIX)) {
      upstreamTools.push(tool)
      continue
    }
    const build = SERVER_TOOLS[tool.type]
    if (!build) {
      throw new InvalidRequestError(
        `body.tools.${index}: server tool "${tool.type}" is not available on this gateway (available: ${SUPPORTED_SERVER_TOOLS.join(', ')})`,
      )
    }
    if (isDisabled(tool.type, disabled)) {
      throw new InvalidRequestError(`body.tools.${index}: server tool "${tool.type}" is disabled for this workspace (disabled_server_tools)`)
    }
    if (seen.has(tool.type)) throw new InvalidRequestError(`body.tools.${index}: server tool "${tool.type}" is listed more than once`)
    seen.add(tool.type)
    const serverTool = build(tool, index, service)
    const { name } = serverTool.definition
    if (clientNames.has(name)) {
      throw new InvalidRequestError(`body.tools: the function name "${name}" is the one ${tool.type} is offered to the model under; rename your function`)
    }
    byFunctionName.set(name, serverTool)
    upstreamTools.push(serverTool.definition)
  }
  return {
    byFunctionName,
    byItemType: new Map([...byFunctionName.values()].map((tool) => [tool.itemType, tool])),
    upstreamTools,
    // spec max_tool_calls: default 30, which is also the maximum, so it bounds a loop that stop conditions rule too.
    maxToolCalls: body.stop_server_tools_when ? MAX_TOOL_CALLS_MAX : (body.max_tool_calls ?? MAX_TOOL_CALLS_MAX),
    stopWhen: body.stop_server_tools_when ?? [],
    isParallel: body.parallel_tool_calls !== false,
  }
}
