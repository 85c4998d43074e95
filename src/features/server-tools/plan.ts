/**
 * Which server tools a request asked for, checked before anything is sent: each `service:*` tool is one
 * this gateway runs, enabled for the workspace, with valid parameters, or the request gets a 400 naming it
 * (docs/decisions.md, "Server tools"). Never a silent drop.
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../core/errors'
import { parseInput } from '../../core/validation'
import type { FunctionTool, Tool } from '../../providers/types'
import { MAX_TOOL_CALLS_MAX, type ResponsesRequestBody } from '../../engine/request.schemas'
import type { InferenceService } from '../../engine/service'
import { AdvisorToolSchema, advisorTool } from './advisor'
import type { ServerTool } from './contract'
import { DatetimeToolSchema, datetimeTool } from './datetime'
import { DeferredTools, withoutDeferLoading } from './deferred-tools'
import { ExecutorToolSchemas, executorTool, parseProviderTool } from './executor'
import { EXECUTOR_PROVIDER_TOOLS, EXECUTOR_SERVER_TOOLS } from './executor-types'
import { ImageGenerationToolSchema, imageGenerationTool } from './image-generation'
import { nativeWebSearchPlan, type NativeWebSearchPlan } from './native-web-search'
import { deeper, noNesting, type Nesting } from './nesting'
import { SearchModelsToolSchema, searchModelsTool } from './search-models'
import type { StopCondition } from './stop'
import { SubagentToolSchema, subagentTool } from './subagent'
import { ToolSearchToolSchema, toolSearchTool } from './tool-search'
import { WebFetchToolSchema, webFetchTool } from './web-fetch'
import { WebSearchToolSchema, webSearchTool } from './web-search'
import { FusionToolSchema, fusionTool } from '../plugins/fusion/tool'

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
  /** `service:web_search` with `engine: "native"`: the provider searches itself, every turn. */
  nativeWebSearch?: NativeWebSearchPlan
  /** The caller's `defer_loading` function tools, offered once `service:tool_search` found them. */
  deferredTools?: DeferredTools
  /** Where this request stands among nested model calls (advisor, subagent), and how theirs are routed. */
  nesting: Nesting
}

type ToolBuilder = (tool: unknown, index: number, service: InferenceService, nesting: Nesting, deferred: DeferredTools) => ServerTool

/** Validates one tool object with `schema`, naming a bad field by its place in the body (`body.tools.2.parameters.timezone`). */
export const parseTool = <S extends v.GenericSchema<unknown, unknown>>(schema: S, tool: unknown, index: number): v.InferOutput<S> =>
  (parseInput(v.object({ tools: v.object({ [index]: schema }) }), { tools: { [index]: tool } }, 'body') as { tools: Record<number, v.InferOutput<S>> }).tools[index]!

const SERVER_TOOLS: Record<string, ToolBuilder> = {
  'service:datetime': (tool, index) => datetimeTool(parseTool(DatetimeToolSchema, tool, index)),
  'service:web_fetch': (tool, index) => webFetchTool(parseTool(WebFetchToolSchema, tool, index)),
  'service:web_search': (tool, index, service) => webSearchTool(parseTool(WebSearchToolSchema, tool, index), { where: `body.tools.${index}`, prefix: 'parameters.', label: 'service:web_search' }, service),
  'service:tool_search': (tool, index, _service, _nesting, deferred) => toolSearchTool(parseTool(ToolSearchToolSchema, tool, index), deferred),
  'service:experimental__search_models': (tool, index) => searchModelsTool(parseTool(SearchModelsToolSchema, tool, index)),
  'service:fusion': (tool, index, service) => fusionTool(parseTool(FusionToolSchema, tool, index), index, service),
  'service:advisor': (tool, index, service, nesting) => advisorTool(parseTool(AdvisorToolSchema, tool, index), index, service, nesting),
  'service:subagent': (tool, index, service, nesting) =>
    subagentTool(parseTool(SubagentToolSchema, tool, index), index, service, nesting, (tools) => {
      planServerTools(service, { tools } as unknown as ResponsesRequestBody, nesting.disabled, deeper(nesting))
    }),
  'service:image_generation': (tool, index, service, nesting) => imageGenerationTool(parseTool(ImageGenerationToolSchema, tool, index), index, service, nesting),
  ...Object.fromEntries(
    EXECUTOR_SERVER_TOOLS.map((type): [string, ToolBuilder] => [
      type,
      (tool, index, service) => executorTool(type, parseTool(ExecutorToolSchemas[type], tool, index), index, service.serverTools.executors),
    ]),
  ),
}

/** Provider tools the gateway runs through an executor when no endpoint can (`Nesting.gatewayRunTools`). */
const PROVIDER_TOOLS_RUN_HERE: Record<string, ToolBuilder> = Object.fromEntries(
  EXECUTOR_PROVIDER_TOOLS.map((type): [string, ToolBuilder] => [
    type,
    (tool, index, service) => executorTool(type, parseProviderTool(type, (schema) => parseTool(schema, tool, index)), index, service.serverTools.executors),
  ]),
)

export const SERVER_TOOL_PREFIX = 'service:'

const isDeferred = (tool: Tool): boolean => tool.type === 'function' && (tool as { defer_loading?: unknown }).defer_loading === true

/**
 * The request's deferred function tools, checked (spec: `defer_loading` needs the tool-search server tool and at
 * least one tool that is not deferred). A provider's own `tool_search` (OpenAI's) honours `defer_loading` itself,
 * so then the tools pass through as sent. Undefined when the gateway has no deferred tools to withhold.
 */
const deferredToolsOf = (tools: readonly Tool[]): DeferredTools | undefined => {
  const first = tools.findIndex(isDeferred)
  const hasServerSearch = tools.some((tool) => tool.type === 'service:tool_search')
  if (first < 0) {
    if (hasServerSearch) throw new InvalidRequestError(`body.tools.${tools.findIndex((tool) => tool.type === 'service:tool_search')}: service:tool_search has nothing to search: mark the function tools it may find with defer_loading: true`)
    return undefined
  }
  if (!hasServerSearch) {
    if (tools.some((tool) => tool.type === 'tool_search')) return undefined
    throw new InvalidRequestError(`body.tools.${first}.defer_loading: a deferred tool needs the service:tool_search tool, which finds it for the model`)
  }
  if (!tools.some((tool) => tool.type !== 'service:tool_search' && !isDeferred(tool))) {
    throw new InvalidRequestError('body.tools: at least one tool besides service:tool_search must not be deferred (defer_loading)')
  }
  return new DeferredTools(tools.filter(isDeferred) as Array<FunctionTool & { name: string }>)
}
/** Tools a request may list several times, each under its own `parameters.name` (OpenRouter's named advisors). */
const NAMED_TOOLS = new Set(['service:advisor', 'service:subagent'])

/** The server-tool types this gateway runs. */
export const SUPPORTED_SERVER_TOOLS = Object.keys(SERVER_TOOLS)

// An entry of `disabled_server_tools` may name the type with or without its prefix.
const isDisabled = (type: string, disabled: readonly string[] | null) =>
  disabled !== null && disabled.some((entry) => entry === type || `${SERVER_TOOL_PREFIX}${entry}` === type)

/**
 * The request's server-tool plan, or `undefined` when it has no server tools (then it runs as a single
 * turn, exactly as before). Throws `InvalidRequestError` naming the tool or field at fault.
 */
export const planServerTools = (
  service: InferenceService,
  body: ResponsesRequestBody,
  disabled: readonly string[] | null,
  nesting: Nesting = noNesting,
): ServerToolPlan | undefined => {
  const tools = (body.tools ?? []) as Tool[]
  const deferred = deferredToolsOf(tools)
  const choice = body.tool_choice as { type?: unknown; name?: unknown } | string | undefined
  if (deferred && typeof choice === 'object' && choice.type === 'function' && typeof choice.name === 'string' && deferred.has(choice.name)) {
    throw new InvalidRequestError(`body.tool_choice: "${choice.name}" is deferred (defer_loading), so the model cannot call it before service:tool_search finds it`)
  }
  const isRunHere = (type: string) => type.startsWith(SERVER_TOOL_PREFIX) || nesting.gatewayRunTools.has(type)
  if (!tools.some((tool) => isRunHere(tool.type))) return undefined
  const byFunctionName = new Map<string, ServerTool>()
  const seen = new Set<string>()
  const clientNames = new Set(tools.flatMap((tool) => (tool.type === 'function' ? [(tool as { name: string }).name] : [])))
  const upstreamTools: Tool[] = []
  let nativeWebSearch: NativeWebSearchPlan | undefined
  for (const [index, tool] of tools.entries()) {
    if (!isRunHere(tool.type)) {
      // With the gateway's tool search, deferred tools wait for it and `defer_loading` is ours to honour; with a
      // provider's own `tool_search`, the provider honours it.
      if (deferred && isDeferred(tool)) continue
      upstreamTools.push(deferred && tool.type === 'function' ? withoutDeferLoading(tool as FunctionTool) : tool)
      continue
    }
    const build = SERVER_TOOLS[tool.type] ?? PROVIDER_TOOLS_RUN_HERE[tool.type]
    if (!build) {
      throw new InvalidRequestError(
        `body.tools.${index}: server tool "${tool.type}" is not available on this gateway (available: ${SUPPORTED_SERVER_TOOLS.join(', ')})`,
      )
    }
    if (isDisabled(tool.type, disabled)) {
      throw new InvalidRequestError(`body.tools.${index}: server tool "${tool.type}" is disabled for this workspace (disabled_server_tools)`)
    }
    // Once per type, but for tools offered under a name of their own (named advisors and subagents): once per name.
    const instanceName = (tool as { parameters?: { name?: unknown } }).parameters?.name
    const key = NAMED_TOOLS.has(tool.type) && typeof instanceName === 'string' ? `${tool.type}:${instanceName.trim()}` : tool.type
    if (seen.has(key)) throw new InvalidRequestError(`body.tools.${index}: server tool "${tool.type}" is listed more than once${key === tool.type ? '' : ' with this name'}`)
    seen.add(key)
    if (tool.type === 'service:web_search') {
      const parsed = parseTool(WebSearchToolSchema, tool, index)
      if (parsed.parameters?.engine === 'native') {
        nativeWebSearch = nativeWebSearchPlan(parsed, index)
        continue
      }
    }
    const serverTool = build(tool, index, service, nesting, deferred ?? new DeferredTools([]))
    const { name } = serverTool.definition
    if (byFunctionName.has(name)) throw new InvalidRequestError(`body.tools.${index}: server tool "${tool.type}" would be offered under the function name "${name}" of another; name it apart`)
    if (clientNames.has(name)) {
      throw new InvalidRequestError(`body.tools: the function name "${name}" is the one ${tool.type} is offered to the model under; rename your function`)
    }
    byFunctionName.set(name, serverTool)
    upstreamTools.push(serverTool.definition)
  }
  return {
    byFunctionName,
    byItemType: new Map(
      [...byFunctionName.values()].flatMap((tool): Array<[string, ServerTool]> => [[tool.itemType, tool], ...(tool.followingItem ? [[tool.followingItem.type, tool] as [string, ServerTool]] : [])]),
    ),
    upstreamTools,
    // spec max_tool_calls: default 30, which is also the maximum, so it bounds a loop that stop conditions rule too.
    maxToolCalls: body.stop_server_tools_when ? MAX_TOOL_CALLS_MAX : (body.max_tool_calls ?? MAX_TOOL_CALLS_MAX),
    stopWhen: body.stop_server_tools_when ?? [],
    isParallel: body.parallel_tool_calls !== false,
    ...(nativeWebSearch ? { nativeWebSearch } : {}),
    ...(deferred ? { deferredTools: deferred } : {}),
    nesting,
  }
}
