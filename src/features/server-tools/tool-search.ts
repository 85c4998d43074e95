/**
 * `service:tool_search`: the model searches the caller's deferred function tools (deferred-tools.ts) by what it
 * needs; the tools found are offered from its next turn on. The client sees OpenAI's two items for a tool search
 * run by the server: `tool_search_call` {call_id, execution: "server", status, arguments} and then
 * `tool_search_output` {call_id, execution: "server", status, tools}, the tools as the caller defined them.
 */

import * as v from 'valibot'
import type { FunctionTool, InputItem } from '../../providers/types'
import { ServerToolRefusal, historyCallId, type ServerTool } from './contract'
import type { DeferredTools } from './deferred-tools'
import { integer } from '../../core/validation'

const DEFAULT_MAX_RESULTS = 5

export const ToolSearchToolSchema = v.strictObject({
  type: v.literal('service:tool_search'),
  parameters: v.optional(v.strictObject({ max_results: v.optional(integer(1, 50)) })),
})

const CallSchema = v.object({ query: v.pipe(v.string(), v.minLength(1)) })

const FUNCTION_NAME = 'service_tool_search'

const callItem = (id: string, callId: string | null, status: 'in_progress' | 'completed' | 'incomplete', query?: string) => ({
  type: 'tool_search_call',
  id,
  call_id: callId,
  execution: 'server',
  status,
  arguments: query === undefined ? {} : { query },
})

// The output's id follows from its call's (`ts_…` → `tso_…`), so a stream's added and done items agree.
const outputId = (itemId: string) => `tso_${itemId.slice(itemId.indexOf('_') + 1)}`

const outputItem = (itemId: string, callId: string | null, status: 'in_progress' | 'completed' | 'incomplete', tools: FunctionTool[]) => ({
  type: 'tool_search_output',
  id: outputId(itemId),
  call_id: callId,
  execution: 'server',
  status,
  tools,
})

const toolNamesOf = (item: Record<string, unknown>): string[] =>
  Array.isArray(item.tools) ? item.tools.flatMap((tool) => (typeof tool?.name === 'string' ? [tool.name as string] : [])) : []

export const toolSearchTool = (tool: v.InferOutput<typeof ToolSearchToolSchema>, deferred: DeferredTools): ServerTool => {
  const maxResults = tool.parameters?.max_results ?? DEFAULT_MAX_RESULTS
  return {
    type: tool.type,
    itemIdPrefix: 'ts',
    itemType: 'tool_search_call',
    definition: {
      type: 'function',
      name: FUNCTION_NAME,
      description:
        `Searches ${deferred.size} more tools you can use, by what you need them for (words of their names and descriptions). ` +
        'The tools found are given to you in your next step; call them then.',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'What the tool should do, in a few words' } },
        required: ['query'],
        additionalProperties: false,
      },
    },
    followingItem: {
      type: 'tool_search_output',
      pending: (itemId) => outputItem(itemId, null, 'in_progress', []),
      failed: (itemId, callId) => outputItem(itemId, callId, 'incomplete', []),
    },
    // The model's call id is not known yet, or not here: OpenAI's type allows null, and the loop fills it in when done.
    pendingItem: (id) => callItem(id, null, 'in_progress'),
    failedItem: (id) => callItem(id, null, 'incomplete'),
    toHistory(item) {
      const callId = historyCallId(item)
      if (item.type === 'tool_search_output') {
        // The tools it found stay offered as the conversation goes on.
        const names = toolNamesOf(item)
        deferred.load(names)
        const output: InputItem = { type: 'function_call_output', call_id: callId, output: names.length > 0 ? `Tools found: ${names.join(', ')}` : 'No tools found.' }
        return [output]
      }
      const query = typeof (item.arguments as { query?: unknown } | undefined)?.query === 'string' ? (item.arguments as { query: string }).query : ''
      return [{ type: 'function_call', call_id: callId, name: FUNCTION_NAME, arguments: JSON.stringify({ query }) }]
    },
    async run(call) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('query must be a non-empty string')
      const { query } = parsed.output
      const found = deferred.search(query, maxResults)
      deferred.load(found.map((tool) => tool.name))
      const listing = found.map((tool) => `- ${tool.name}${tool.description ? `: ${tool.description}` : ''}`).join('\n')
      return {
        output: found.length === 0 ? `No tools match "${query}".` : `Tools found for "${query}" (you can call them from your next step):\n${listing}`,
        item: callItem(call.itemId, call.callId, 'completed', query),
        followingItem: outputItem(call.itemId, call.callId, 'completed', found),
      }
    },
  }
}
