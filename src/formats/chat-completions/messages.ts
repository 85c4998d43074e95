/**
 * Chat messages → the engine's input items. Roles keep their place in the conversation (a system
 * message halfway through stays there); an assistant turn becomes its reasoning items, its message, its
 * generated `images` (as `image_generation_call` items, so an image model can edit them), then one
 * `function_call` per tool call; a `tool` message becomes a `function_call_output`.
 */

import type { ResponsesRequestBody } from '../../engine/request.schemas'
import { IMAGE_DATA_URL, type ChatMessage, type ChatUserPart } from './schemas'

type InputItem = Exclude<ResponsesRequestBody['input'], string>[number]
type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>
type ReasoningDetail = NonNullable<AssistantMessage['reasoning_details']>[number]
type TextPart = { type: 'text'; text: string; cache_control?: { type: 'ephemeral'; ttl?: string } }

// A type alias, not an interface: input items are open records.
type ReasoningItem = {
  type: 'reasoning'
  summary: Array<{ type: 'summary_text'; text: string }>
  content?: Array<{ type: 'reasoning_text'; text: string }>
  encrypted_content?: string
  signature?: string
  format?: string
}

const toInputText = (part: TextPart) => ({ type: 'input_text' as const, text: part.text, ...(part.cache_control ? { cache_control: part.cache_control } : {}) })

const textContent = (content: string | TextPart[]) => (typeof content === 'string' ? content : content.map(toInputText))

// OpenRouter's file parts carry a data: URL or a plain URL in `file_data`; the engine keeps the two apart.
const toFilePart = (file: Extract<ChatUserPart, { type: 'file' }>['file']) => ({
  type: 'input_file' as const,
  ...(file.file_data === undefined ? {} : /^https?:\/\//i.test(file.file_data) ? { file_url: file.file_data } : { file_data: file.file_data }),
  ...(file.file_id === undefined ? {} : { file_id: file.file_id }),
  ...(file.filename === undefined ? {} : { filename: file.filename }),
})

const toUserPart = (part: ChatUserPart) => {
  switch (part.type) {
    case 'text':
      return toInputText(part)
    case 'image_url':
      return { type: 'input_image' as const, image_url: part.image_url.url, ...(part.image_url.detail ? { detail: part.image_url.detail } : {}) }
    case 'file':
      return toFilePart(part.file)
    case 'input_audio':
      return { type: 'input_audio' as const, input_audio: part.input_audio }
  }
}

/**
 * `reasoning_details` as reasoning items: consecutive details share an item until one repeats a kind the
 * item holds, comes from another family (`format`) or follows a signature (which closes a provider's block), so an OpenAI summary and its
 * encrypted content stay one item and each signed Anthropic or Gemini block stays its own.
 */
const reasoningItems = (details: ReasoningDetail[]): ReasoningItem[] => {
  const items: ReasoningItem[] = []
  let current: ReasoningItem | undefined
  const itemFor = (kind: 'text' | 'summary' | 'encrypted', format: string | null | undefined) => {
    const isTaken =
      !current ||
      current.signature !== undefined ||
      (Boolean(format) && Boolean(current.format) && format !== current.format) ||
      (kind === 'text' && current.content !== undefined) ||
      (kind === 'summary' && current.summary.length > 0) ||
      (kind === 'encrypted' && current.encrypted_content !== undefined)
    if (isTaken) {
      current = { type: 'reasoning', summary: [] }
      items.push(current)
    }
    if (format && !current!.format) current!.format = format
    return current!
  }
  for (const detail of details) {
    if (detail.type === 'reasoning.text') {
      const item = itemFor('text', detail.format)
      item.content = [{ type: 'reasoning_text', text: detail.text ?? '' }]
      if (detail.signature) item.signature = detail.signature
    } else if (detail.type === 'reasoning.summary') {
      itemFor('summary', detail.format).summary.push({ type: 'summary_text', text: detail.summary })
    } else {
      itemFor('encrypted', detail.format).encrypted_content = detail.data
    }
  }
  return items
}

const assistantItems = (message: AssistantMessage): InputItem[] => {
  const items: InputItem[] = []
  if (message.reasoning_details?.length) items.push(...reasoningItems(message.reasoning_details))
  else if (message.reasoning) items.push({ type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: message.reasoning }] })
  const content =
    typeof message.content === 'string'
      ? message.content === ''
        ? []
        : [{ type: 'output_text' as const, text: message.content }]
      : (message.content ?? []).map((part) =>
          part.type === 'text' ? { type: 'output_text' as const, text: part.text } : { type: 'refusal' as const, refusal: part.refusal },
        )
  if (message.refusal) content.push({ type: 'refusal', refusal: message.refusal })
  if (content.length > 0) items.push({ type: 'message', role: 'assistant', content })
  for (const image of message.images ?? []) {
    // The schema admitted only base64 image data URLs.
    const [, format, data] = IMAGE_DATA_URL.exec(image.image_url.url)!
    items.push({ type: 'image_generation_call', status: 'completed', result: data, output_format: format })
  }
  for (const call of message.tool_calls ?? []) {
    items.push({ type: 'function_call', call_id: call.id, name: call.function.name, arguments: call.function.arguments })
  }
  return items
}

export const toInputItems = (messages: ChatMessage[]): InputItem[] =>
  messages.flatMap((message): InputItem[] => {
    switch (message.role) {
      case 'system':
      case 'developer':
        return [{ type: 'message', role: message.role, content: textContent(message.content) }]
      case 'user':
        return [{ type: 'message', role: 'user', content: typeof message.content === 'string' ? message.content : message.content.map(toUserPart) }]
      case 'assistant':
        return assistantItems(message)
      case 'tool':
        return [{ type: 'function_call_output', call_id: message.tool_call_id, output: textContent(message.content) }]
    }
  })
