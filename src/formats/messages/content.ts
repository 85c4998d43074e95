/**
 * Anthropic messages → the engine's input items, block by block and in order: text, images and documents
 * become content parts of a message of the turn's role; `tool_use` becomes a `function_call` with its id
 * kept, `tool_result` a `function_call_output`; `thinking` (signed) and `redacted_thinking` become
 * reasoning items the Anthropic adapter turns back into the very same blocks.
 */

import type { ResponsesRequestBody } from '../../engine/request.schemas'
import { ANTHROPIC_REASONING_FORMAT } from '../../providers/anthropic/wire'
import type { AssistantBlock, DocumentBlock, ImageBlock, MessageParam, TextBlock, UserBlock } from './schemas'

type InputItem = Exclude<ResponsesRequestBody['input'], string>[number]
type Part = Record<string, unknown> & { type: string }
type ToolResultBlock = Extract<UserBlock, { type: 'tool_result' }>

const withCacheControl = (block: { cache_control?: { type: 'ephemeral'; ttl?: string } | null | undefined }) =>
  block.cache_control ? { cache_control: block.cache_control } : {}

const utf8ToBase64 = (text: string) => {
  let binary = ''
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte)
  return btoa(binary)
}

const textPart = (block: TextBlock, type: 'input_text' | 'output_text'): Part => ({ type, text: block.text, ...withCacheControl(block) })

const imagePart = (block: ImageBlock): Part => ({
  type: 'input_image',
  image_url: block.source.type === 'url' ? block.source.url : `data:${block.source.media_type};base64,${block.source.data}`,
  ...withCacheControl(block),
})

// A text document travels as a text/plain data URL, which the Anthropic adapter turns back into a text source.
const documentPart = (block: DocumentBlock): Part => {
  const { source } = block
  const file =
    source.type === 'url'
      ? { file_url: source.url }
      : { file_data: source.type === 'base64' ? `data:application/pdf;base64,${source.data}` : `data:text/plain;base64,${utf8ToBase64(source.data)}` }
  return { type: 'input_file', ...file, ...(block.title ? { filename: block.title } : {}), ...withCacheControl(block) }
}

const contentPart = (block: TextBlock | ImageBlock | DocumentBlock): Part => {
  switch (block.type) {
    case 'text':
      return textPart(block, 'input_text')
    case 'image':
      return imagePart(block)
    case 'document':
      return documentPart(block)
  }
}

const toolResultItem = (block: ToolResultBlock): InputItem => ({
  type: 'function_call_output',
  call_id: block.tool_use_id,
  output: block.content === undefined ? '' : typeof block.content === 'string' ? block.content : block.content.map(contentPart),
  ...(block.is_error ? { is_error: true } : {}),
  ...withCacheControl(block),
})

/**
 * Signed thinking carries no family: the Anthropic adapter takes signed reasoning as Claude's. Redacted
 * thinking exists only at Anthropic, so it is marked as Claude's.
 */
const reasoningItem = (block: Extract<AssistantBlock, { type: 'thinking' | 'redacted_thinking' }>): InputItem =>
  block.type === 'thinking'
    ? { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: block.thinking }], ...(block.signature ? { signature: block.signature } : {}) }
    : { type: 'reasoning', summary: [], encrypted_content: block.data, format: ANTHROPIC_REASONING_FORMAT }

/** Consecutive content blocks share one message item; anything else ends it. */
const turnItems = <B extends { type: string }>(
  role: 'user' | 'assistant',
  blocks: B[],
  toPart: (block: B) => Part | undefined,
  toItem: (block: B) => InputItem,
): InputItem[] => {
  const items: InputItem[] = []
  let parts: Part[] = []
  const flush = () => {
    if (parts.length > 0) items.push({ type: 'message', role, content: parts as never })
    parts = []
  }
  for (const block of blocks) {
    const part = toPart(block)
    if (part) {
      parts.push(part)
      continue
    }
    flush()
    items.push(toItem(block))
  }
  flush()
  return items
}

const userItems = (content: string | UserBlock[]): InputItem[] =>
  typeof content === 'string'
    ? [{ type: 'message', role: 'user', content }]
    : turnItems(
        'user',
        content,
        (block) => (block.type === 'tool_result' ? undefined : contentPart(block)),
        (block) => toolResultItem(block as ToolResultBlock),
      )

const assistantItems = (content: string | AssistantBlock[]): InputItem[] => {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: content }] }]
  return turnItems(
    'assistant',
    content,
    (block) => (block.type === 'text' ? textPart(block, 'output_text') : undefined),
    (block) => {
      if (block.type === 'tool_use') {
        return { type: 'function_call', call_id: block.id, name: block.name, arguments: JSON.stringify(block.input), ...withCacheControl(block) }
      }
      return reasoningItem(block as Extract<AssistantBlock, { type: 'thinking' | 'redacted_thinking' }>)
    },
  )
}

export const toInputItems = (messages: MessageParam[]): InputItem[] =>
  messages.flatMap((message) => (message.role === 'user' ? userItems(message.content) : assistantItems(message.content)))
