/**
 * The texts content filters read, and the copies of a request body or an answer with those texts rewritten.
 * Input: `instructions`, the messages of every role and tool results (function call outputs). Output: the text
 * parts of the answer's messages. Images, files, tool-call arguments and reasoning are not read.
 */

import type { InputContentPart, InputItem, OutputItem } from '../../providers/types'
import type { ResponsesRequestBody } from '../../engine/request.schemas'

/** Who wrote a text: builtins scoped `user_only` read only the caller's own messages. */
export type TextAuthor = 'user' | 'other'

/** Returns the text to keep in place of `text` (the same string when nothing changes). */
export type TextVisitor = (text: string, author: TextAuthor) => string

const isTextPart = (part: InputContentPart): part is { type: 'input_text' | 'output_text'; text: string } =>
  (part.type === 'input_text' || part.type === 'output_text') && typeof (part as { text?: unknown }).text === 'string'

const mapParts = (parts: InputContentPart[], author: TextAuthor, visit: TextVisitor): InputContentPart[] => {
  let changed = false
  const next = parts.map((part) => {
    if (!isTextPart(part)) return part
    const text = visit(part.text, author)
    if (text === part.text) return part
    changed = true
    return { ...part, text } as InputContentPart
  })
  return changed ? next : parts
}

const mapContent = <C extends string | InputContentPart[]>(content: C, author: TextAuthor, visit: TextVisitor): C =>
  (typeof content === 'string' ? visit(content, author) : mapParts(content, author, visit)) as C

const mapItem = (item: InputItem, visit: TextVisitor): InputItem => {
  const type = item.type ?? 'message'
  if (type === 'message' && 'role' in item && 'content' in item) {
    const message = item as Extract<InputItem, { role: unknown }>
    const content = mapContent(message.content, message.role === 'user' ? 'user' : 'other', visit)
    return content === message.content ? item : { ...message, content }
  }
  if (type === 'function_call_output' && 'output' in item) {
    const result = item as Extract<InputItem, { type: 'function_call_output' }>
    const output = mapContent(result.output, 'other', visit)
    return output === result.output ? item : { ...result, output }
  }
  return item
}

/** `body` with every text `visit` rewrote; the same object when it rewrote none. */
export const mapRequestTexts = (body: ResponsesRequestBody, visit: TextVisitor): ResponsesRequestBody => {
  const instructions = typeof body.instructions === 'string' ? visit(body.instructions, 'other') : body.instructions
  let input = body.input
  if (typeof input === 'string') input = visit(input, 'user')
  else if (Array.isArray(input)) {
    const items = input as InputItem[]
    const mapped = items.map((item) => mapItem(item, visit))
    if (mapped.some((item, index) => item !== items[index])) input = mapped as typeof input
  }
  if (instructions === body.instructions && input === body.input) return body
  return { ...body, instructions, input }
}

/** `output` with every message text `visit` rewrote; the same array when it rewrote none. */
export const mapOutputTexts = (output: OutputItem[], visit: TextVisitor): OutputItem[] => {
  let changed = false
  const next = output.map((item) => {
    if (item.type !== 'message' || !Array.isArray(item.content)) return item
    const parts = item.content as InputContentPart[]
    const content = mapParts(parts, 'other', visit)
    if (content === parts) return item
    changed = true
    return { ...item, content } as OutputItem
  })
  return changed ? next : output
}
