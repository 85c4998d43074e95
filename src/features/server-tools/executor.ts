/**
 * Server tools whose work happens somewhere the operator owns (a sandbox, a file store): `service:bash`,
 * `service:shell`, `service:apply_patch`, `service:files`. The gateway runs the loop; the operator's
 * `ToolExecutor` (`createGateway({ serverTools: { executors } })`) runs each call. Without one the tool is a 400
 * naming it, never a tool the model calls into nothing (docs/decisions.md, "Server tools").
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../core/errors'
import { boundedJson, integer, passThroughObject } from '../../core/validation'
import { historyPair, type ServerTool } from './contract'
import type { InferenceService } from '../../engine/service'
import { EXECUTOR_PROVIDER_TOOLS, type ExecutableToolType, type ExecutorProviderTool, type ExecutorServerTool, type ToolExecutors } from './executor-types'

const str = (description: string) => ({ type: 'string', description })

/** What the model is offered for each kind unless the executor says otherwise. */
const DEFAULTS: Record<ExecutableToolType, { description: string; parameters: Record<string, unknown> }> = {
  'service:bash': {
    description: 'Runs a bash command in a sandbox and returns its output and exit code.',
    parameters: { type: 'object', properties: { command: str('The bash command to run.') }, required: ['command'], additionalProperties: false },
  },
  'service:shell': {
    description: 'Runs shell commands in a sandbox, one after another, and returns their output and exit codes.',
    parameters: {
      type: 'object',
      properties: { commands: { type: 'array', items: { type: 'string' }, description: 'The commands to run, in order.' }, timeout_ms: { type: 'integer', description: 'Time limit per command.' } },
      required: ['commands'],
      additionalProperties: false,
    },
  },
  'service:apply_patch': {
    description: 'Creates, updates or deletes a file in the workspace. For updates, give a unified diff.',
    parameters: {
      type: 'object',
      properties: { operation: { type: 'string', enum: ['create_file', 'update_file', 'delete_file'] }, path: str('The file path.'), diff: str('The new content (create) or the diff (update).') },
      required: ['operation', 'path'],
      additionalProperties: false,
    },
  },
  file_search: {
    description: 'Searches the configured document stores and returns the passages that match.',
    parameters: { type: 'object', properties: { query: str('What to look for.') }, required: ['query'], additionalProperties: false },
  },
  code_interpreter: {
    description: 'Runs Python code in a sandbox and returns its output.',
    parameters: { type: 'object', properties: { code: str('The Python code to run.') }, required: ['code'], additionalProperties: false },
  },
  mcp: {
    description: 'Calls a tool of the configured MCP server and returns its result.',
    parameters: {
      type: 'object',
      properties: { name: str('The MCP tool to call.'), arguments: { type: 'object', description: "The tool's arguments." } },
      required: ['name'],
      additionalProperties: false,
    },
  },
  'service:files': {
    description: 'Lists, reads, writes or deletes files in the workspace.',
    parameters: {
      type: 'object',
      properties: { action: { type: 'string', enum: ['list', 'read', 'write', 'delete'] }, path: str('The file or directory path.'), content: str('The content to write.') },
      required: ['action', 'path'],
      additionalProperties: false,
    },
  },
}

const SandboxParameters = {
  engine: v.optional(v.pipe(v.string(), v.minLength(1))),
  environment: v.optional(boundedJson(v.unknown())),
  sleep_after_seconds: v.optional(integer(0, 86_400)),
}

/** The parameters each kind takes (OpenRouter's), passed to the executor as they are. */
export const ExecutorToolSchemas: Record<ExecutorServerTool, v.GenericSchema<unknown, { type: string; parameters?: Record<string, unknown> | undefined }>> = {
  'service:bash': v.strictObject({ type: v.literal('service:bash'), parameters: v.optional(v.strictObject(SandboxParameters)) }),
  'service:shell': v.strictObject({ type: v.literal('service:shell'), parameters: v.optional(v.strictObject(SandboxParameters)) }),
  'service:apply_patch': v.strictObject({ type: v.literal('service:apply_patch'), parameters: v.optional(v.strictObject({ engine: SandboxParameters.engine })) }),
  'service:files': v.strictObject({ type: v.literal('service:files'), parameters: v.optional(v.strictObject({})) }),
}

// A provider tool keeps OpenAI's shape (its required fields, the gaps of the spec's tools union); the executor gets its fields.
const nonEmpty = v.pipe(v.string(), v.minLength(1))
const PROVIDER_TOOL_FIELDS: Record<ExecutorProviderTool, v.ObjectEntries> = {
  file_search: { vector_store_ids: v.pipe(v.array(nonEmpty), v.minLength(1, 'must have at least 1 vector store id')) },
  code_interpreter: { container: boundedJson(v.union([nonEmpty, v.record(v.string(), v.unknown())], 'must be a container id or object')) },
  mcp: { server_label: nonEmpty },
}

/** A provider tool the gateway runs through its executor, as a server tool whose `parameters` are the tool's own fields. */
export const parseProviderTool = (type: ExecutorProviderTool, parse: (schema: v.GenericSchema) => unknown) => {
  const { type: _type, ...fields } = parse(passThroughObject({ type: v.literal(type), ...PROVIDER_TOOL_FIELDS[type] })) as Record<string, unknown>
  return { parameters: fields }
}

const functionName = (type: ExecutableToolType) => `service_${type.replace(/^service:/, '')}`

// Provider tools keep OpenAI's item names (`file_search_call`); the gateway's own are named by their type.
const itemTypeOf = (type: ExecutableToolType) => (type.startsWith('service:') ? type : `${type}_call`)

const argumentsOf = (text: unknown): Record<string, unknown> => {
  if (typeof text !== 'string') return {}
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

export const executorTool = (type: ExecutableToolType, tool: { parameters?: Record<string, unknown> | undefined }, index: number, executors: ToolExecutors): ServerTool => {
  const executor = executors[type]
  if (!executor) {
    throw new InvalidRequestError(
      `body.tools.${index}: server tool "${type}" needs a tool executor, and this gateway's operator has configured none for it (serverTools.executors)`,
    )
  }
  const name = functionName(type)
  const parameters = tool.parameters ?? {}
  const defaults = DEFAULTS[type]
  const itemType = itemTypeOf(type)
  const item = (id: string, status: string, fields: Record<string, unknown>) => ({ ...fields, type: itemType, id, status })
  return {
    type,
    itemIdPrefix: 'exe',
    itemType,
    definition: { type: 'function', name, description: executor.description ?? defaults.description, parameters: executor.parameters ?? defaults.parameters },
    pendingItem: (id) => item(id, 'in_progress', {}),
    failedItem: (id, message) => item(id, 'incomplete', { error: message }),
    toHistory(entry) {
      const output = typeof entry.output === 'string' ? entry.output : `Error: ${typeof entry.error === 'string' ? entry.error : 'not run'}`
      return historyPair(entry, name, argumentsOf(entry.arguments), output)
    },
    async run(call, context) {
      const result = await executor.run(
        { type, callId: call.callId, arguments: call.arguments, parameters },
        { requestId: context.requestId, accountId: context.caller.accountId, workspaceId: context.caller.workspaceId, signal: context.signal },
      )
      if (typeof result?.output !== 'string') throw new Error(`the ${type} executor returned no output string`)
      return {
        output: result.output,
        item: item(call.itemId, 'completed', { ...result.item, arguments: JSON.stringify(call.arguments), output: result.output }),
        ...(typeof result.cost === 'number' && Number.isFinite(result.cost) && result.cost > 0 ? { cost: result.cost } : {}),
      }
    },
  }
}

/**
 * The provider tools of a request the gateway runs itself: those with an operator executor that no endpoint of the
 * requested models can run (an endpoint that can is routed to instead, and the provider runs the tool).
 */
export const providerToolsRunHere = (service: InferenceService, tools: ReadonlyArray<{ type: string }> | undefined, models: readonly string[]): Set<string> => {
  const runHere = new Set<string>()
  for (const { type } of tools ?? []) {
    if (!(EXECUTOR_PROVIDER_TOOLS as readonly string[]).includes(type) || !service.serverTools.executors[type as ExecutorProviderTool]) continue
    const isRunUpstream = models.some((slug) =>
      (service.models.find(slug)?.endpoints ?? []).some((endpoint) => service.providers.get(endpoint.provider)?.adapter.providerTools?.includes(type) === true),
    )
    if (!isRunUpstream) runHere.add(type)
  }
  return runHere
}
