/**
 * `service:subagent` (OpenRouter's subagent server tool): the model hands a self-contained task to a worker model
 * and reads its outcome as the call's result. The worker runs as an ordinary engine call, with its own server-tool
 * loop when it is given server tools; its usage is added to the response's.
 *
 * A worker's client function calls would have to be run by the client in the middle of the task, which a
 * stateless gateway cannot pause for: a subagent gets server tools only, and `inherit_functions` /
 * `inherited_function_names` are refused (docs/decisions.md, "Server tools").
 */

import * as v from 'valibot'
import { InvalidRequestError, isGatewayError } from '../../core/errors'
import { withServerToolName } from '../../engine/request.schemas'
import type { InferenceService } from '../../engine/service'
import { ServerToolRefusal, historyPair, type ServerTool } from './contract'
import { answerText, nestedBody, nestedModelFields, planNestedModel, runNestedCall } from './nested-call'
import type { Nesting } from './nesting'
import { integer } from '../../core/validation'

/** OpenRouter caps a subagent's tool-calling steps at 25. */
export const SUBAGENT_MAX_TOOL_CALLS = 25

export const SubagentToolSchema = v.strictObject({
  type: v.literal('service:subagent'),
  parameters: v.optional(
    v.strictObject({
      ...nestedModelFields,
      tools: v.optional(v.pipe(v.array(v.looseObject({ type: v.string(), parameters: v.optional(v.unknown()) })), v.maxLength(16, 'at most 16 tools'))),
      inherit_functions: v.optional(v.boolean()),
      inherited_function_names: v.optional(v.array(v.string())),
      max_tool_calls: v.optional(integer(1, SUBAGENT_MAX_TOOL_CALLS)),
    }),
  ),
})

const CallSchema = v.object({
  task_name: v.optional(v.nullable(v.string())),
  task_description: v.pipe(v.string(), v.trim(), v.minLength(1)),
})

const ITEM_TYPE = 'service:subagent'
/** The function an instance is offered under: one per name, so a request may offer several (OpenRouter's named subagents). */
const functionNameOf = (name: unknown) => (typeof name === 'string' && name !== '' ? `service_subagent_${name.replace(/[^A-Za-z0-9_-]/g, '_')}` : 'service_subagent')

const FUNCTIONS_REFUSED =
  "a subagent's function calls would have to be run by the client in the middle of its task, which this gateway does not do; give the subagent server tools (service:*) only"

/** Checks the worker's own server tools as a request one level deeper would (plan.ts), throwing its 400s. */
export type NestedToolCheck = (tools: ReadonlyArray<{ type: string }>) => void

// The nested check names fields as a request's (`body.tools.0…`); here they sit inside this tool's parameters.
const insideThisTool = (index: number, check: () => void) => {
  try {
    check()
  } catch (error) {
    if (!isGatewayError(error) || error.status !== 400) throw error
    throw new InvalidRequestError(error.message.replace(/^body\.tools\b/, `body.tools.${index}.parameters.tools`))
  }
}

export const subagentTool = (
  tool: v.InferOutput<typeof SubagentToolSchema>,
  index: number,
  service: InferenceService,
  nesting: Nesting,
  checkTools: NestedToolCheck,
): ServerTool => {
  const field = `body.tools.${index}.parameters`
  if (nesting.depth > 0) throw new InvalidRequestError(`body.tools.${index}: a subagent cannot call service:subagent; only the caller's own model can delegate`)
  const parameters = tool.parameters ?? {}
  if (parameters.inherit_functions === true) throw new InvalidRequestError(`${field}.inherit_functions: ${FUNCTIONS_REFUSED}`)
  if ((parameters.inherited_function_names?.length ?? 0) > 0) throw new InvalidRequestError(`${field}.inherited_function_names: ${FUNCTIONS_REFUSED}`)
  const tools = (parameters.tools ?? []).map(withServerToolName)
  for (const [position, nested] of tools.entries()) {
    if (nested.type === 'function') throw new InvalidRequestError(`${field}.tools.${position}: ${FUNCTIONS_REFUSED}`)
    if (!nested.type.startsWith('service:')) {
      throw new InvalidRequestError(`${field}.tools.${position}: a subagent runs server tools (service:*) only, not the provider tool "${nested.type}"`)
    }
  }
  if (parameters.max_tool_calls !== undefined && tools.length === 0) {
    throw new InvalidRequestError(`${field}.max_tool_calls: applies only to a subagent given tools`)
  }
  insideThisTool(index, () => checkTools(tools))
  const toolFields = tools.length > 0 ? { tools, ...(parameters.max_tool_calls === undefined ? {} : { max_tool_calls: parameters.max_tool_calls }) } : {}
  const template = nestedBody(parameters, parameters.model ?? nesting.defaultModel, [], toolFields as never)
  const planned = planNestedModel(service, nesting, parameters.model, index, template)
  const named = parameters.name ? { name: parameters.name } : {}
  const item = (id: string, status: string, fields: Record<string, unknown>) => ({ type: ITEM_TYPE, id, status, model: planned.model, ...named, ...fields })

  return {
    type: tool.type,
    itemIdPrefix: 'sub',
    itemType: ITEM_TYPE,
    definition: {
      type: 'function',
      name: functionNameOf(parameters.name),
      description:
        `Delegate a self-contained task to ${parameters.name ? `the worker "${parameters.name}"` : 'a worker model'} (${planned.model}). ` +
        'The worker does not see this conversation, so describe the task with everything it needs. Returns its outcome.',
      parameters: {
        type: 'object',
        properties: {
          task_name: { type: 'string', description: 'A short name for the task.' },
          task_description: { type: 'string', description: 'The task, complete and self-contained.' },
        },
        required: ['task_description'],
        additionalProperties: false,
      },
    },
    pendingItem: (id) => item(id, 'in_progress', {}),
    failedItem: (id, message) => item(id, 'failed', { error: message }),
    toHistory(entry) {
      const args = {
        ...(typeof entry.task_name === 'string' ? { task_name: entry.task_name } : {}),
        task_description: typeof entry.task_description === 'string' ? entry.task_description : '',
      }
      const output = entry.status === 'completed' && typeof entry.outcome === 'string' ? entry.outcome : `Error: ${typeof entry.error === 'string' ? entry.error : 'not run'}`
      return historyPair(entry, functionNameOf(entry.name), args, output)
    },
    async run(call, context) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('the arguments must have a non-empty string "task_description"')
      const { task_name: taskName, task_description: taskDescription } = parsed.output
      const task = { ...(taskName ? { task_name: taskName } : {}), task_description: taskDescription }
      const input = [{ type: 'message' as const, role: 'user' as const, content: taskName ? `Task: ${taskName}\n\n${taskDescription}` : taskDescription }]
      const result = await runNestedCall(context, nestedBody(parameters, planned.model, input, toolFields as never), planned.attempts)
      // The worker's own searches count among the response's (`web_search_requests`), as their cost does.
      const searches = (result.usage as { server_tool_use_details?: { web_search_requests?: number } } | null)?.server_tool_use_details?.web_search_requests ?? 0
      const spent = { ...(result.usage ? { usage: result.usage } : {}), ...(searches > 0 ? { webSearchRequests: searches } : {}) }
      if (result.status === 'failed') {
        const message = `the worker's task failed: ${result.error?.message ?? 'unknown error'}`
        return { output: `Error: ${message}`, item: item(call.itemId, 'failed', { call_id: call.callId, ...task, model: result.model, error: message }), ...spent }
      }
      const outcome = answerText(result)
      return { output: outcome, item: item(call.itemId, 'completed', { call_id: call.callId, ...task, model: result.model, outcome }), ...spent }
    },
  }
}
