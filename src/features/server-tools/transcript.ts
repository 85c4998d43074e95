/**
 * The caller's conversation as another model reads it (`service:advisor` with `forward_transcript`): messages as
 * they were, tool calls and their results as text. The advisor has none of the conversation's tools, and some
 * upstreams refuse a tool call in the history of a request that does not define that tool.
 */

import type { InputItem, MessageItem } from '../../providers/types'

const message = (role: MessageItem['role'], text: string): MessageItem => ({ type: 'message', role, content: text })

const outputText = (output: unknown): string =>
  typeof output === 'string'
    ? output
    : Array.isArray(output)
      ? output.map((part) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : '[non-text content]')).join('')
      : ''

/**
 * `items` as messages a model without tools can read. `skipCallId` is the call being answered: the advisor is
 * asked its prompt, not shown the request for it.
 */
export const readableTranscript = (items: readonly InputItem[], skipCallId: string): MessageItem[] => {
  const names = new Map<string, string>()
  const messages: MessageItem[] = []
  for (const item of items) {
    const type = item.type ?? 'message'
    if (type === 'message') {
      const { role, content } = item as MessageItem
      messages.push({ type: 'message', role, content })
    } else if (type === 'function_call') {
      const call = item as { call_id: string; name: string; arguments: string }
      if (call.call_id === skipCallId) continue
      names.set(call.call_id, call.name)
      messages.push(message('assistant', `[Called the tool ${call.name} with ${call.arguments || '{}'}]`))
    } else if (type === 'function_call_output') {
      const result = item as { call_id: string; output: unknown }
      if (result.call_id === skipCallId) continue
      messages.push(message('user', `[Result of the tool ${names.get(result.call_id) ?? 'call'}: ${outputText(result.output)}]`))
    }
    // Reasoning and provider-run items (searches, images) are the executor's own workings, not the conversation.
  }
  return messages
}
