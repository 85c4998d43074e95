/**
 * Responses `instructions` + `input` → Gemini `systemInstruction` + `contents`.
 *
 * - Roles: user → `user`, assistant → `model`; instructions, then system and developer messages
 *   (wherever they stand: Gemini has no mid-conversation system turn) → `systemInstruction`.
 *   Consecutive turns of one role are merged, as Gemini wants user and model to alternate.
 * - `function_call` → a model `functionCall {id, name, args}` part (`arguments` parsed);
 *   `function_call_output` → a user `functionResponse {id, name, response}` part. Gemini needs the
 *   function name there, taken from the `function_call` with the same `call_id` earlier in the
 *   input. `response` must be an object: output that is a JSON object is sent as is, anything
 *   else as `{result: output}`.
 * - Thought signatures round-trip through `reasoning` items with `format: 'google-gemini-v1'` and
 *   `signature` (see `readParts`, which places them): a signature is sent back on the next
 *   `functionCall` part when a function call follows the reasoning item in the same model turn,
 *   otherwise on the model part just before it (the text it trailed), otherwise on the next model
 *   part. Gemini validates signatures only on each step's first function call (Gemini 3); when such
 *   a call has none (history from another model), the documented `skip_thought_signature_validator`
 *   value is sent instead. Thought summaries are not sent back: the signature carries the model's
 *   reasoning state, and the summaries are only a view of it. Other providers' reasoning is dropped.
 */

import { InvalidRequestError } from '../../core/errors'
import { imageMediaType, type FunctionCallItem, type FunctionCallOutputItem, type InputContentPart, type InputItem, type MessageItem, type OutputImage, type ReasoningItem, type ResponsesRequest } from '../types'
import { fileDataPart, fileUrlPart, imagePart } from './media'
import { isGeminiModel, usesThinkingLevels } from './thinking'
import { GEMINI_REASONING_FORMAT, type GeminiContent, type GeminiPart } from './wire'

const SKIP_SIGNATURE_VALIDATOR = 'skip_thought_signature_validator'

type SignablePart = Extract<GeminiPart, { thoughtSignature?: string }>

const unsupported = (path: string, what: string) => new InvalidRequestError(`${path}: ${what} is not supported by Gemini`)

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** One content part of a user or assistant message. */
const contentPart = (part: InputContentPart, path: string): GeminiPart | undefined => {
  switch (part.type) {
    case 'input_text':
    case 'output_text': {
      const text = (part as { text: string }).text
      return text === '' ? undefined : { text }
    }
    case 'refusal': {
      const refusal = (part as { refusal: string }).refusal
      return refusal === '' ? undefined : { text: refusal }
    }
    case 'input_image': {
      const image = part as Extract<InputContentPart, { type: 'input_image' }>
      if (typeof image.image_url === 'string' && image.image_url !== '') return imagePart(image.image_url, `${path}.image_url`)
      throw unsupported(path, 'an image without image_url (file_id)')
    }
    case 'input_file': {
      const file = part as Extract<InputContentPart, { type: 'input_file' }>
      if (typeof file.file_data === 'string' && file.file_data !== '') return fileDataPart(file.file_data, file.filename, `${path}.file_data`)
      if (typeof file.file_url === 'string' && file.file_url !== '') return fileUrlPart(file.file_url, file.filename)
      throw unsupported(path, 'a file without file_data or file_url (file_id)')
    }
    default:
      throw unsupported(path, `content type "${part.type}"`)
  }
}

const messageParts = (content: MessageItem['content'], path: string): GeminiPart[] => {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }]
  const parts: GeminiPart[] = []
  for (const [index, part] of content.entries()) {
    const translated = contentPart(part, `${path}.content[${index}]`)
    if (translated) parts.push(translated)
  }
  return parts
}

const systemText = (content: MessageItem['content'], path: string): string => {
  if (typeof content === 'string') return content
  let text = ''
  for (const [index, part] of content.entries()) {
    if (part.type !== 'input_text' && part.type !== 'output_text') throw unsupported(`${path}.content[${index}]`, `content type "${part.type}" in a system message`)
    text += (part as { text: string }).text
  }
  return text
}

const parseArguments = (item: FunctionCallItem, path: string): Record<string, unknown> => {
  if (item.arguments === undefined || item.arguments.trim() === '') return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(item.arguments)
  } catch {
    throw new InvalidRequestError(`${path}.arguments: not valid JSON`)
  }
  if (!isPlainObject(parsed)) throw new InvalidRequestError(`${path}.arguments: must be a JSON object for Gemini`)
  return parsed
}

/** `response` must be an object: JSON objects pass as is, anything else becomes `{result}`. */
const functionResponse = (output: FunctionCallOutputItem['output'], path: string): { response: Record<string, unknown>; media: GeminiPart[] } => {
  if (typeof output === 'string') {
    // Only text that looks like an object is parsed (cheap check before JSON.parse).
    if (output.trimStart().startsWith('{')) {
      try {
        const parsed: unknown = JSON.parse(output)
        if (isPlainObject(parsed)) return { response: parsed, media: [] }
      } catch {
        // Not JSON after all: sent as text.
      }
    }
    return { response: { result: output }, media: [] }
  }
  let text = ''
  const media: GeminiPart[] = []
  for (const [index, part] of output.entries()) {
    if (part.type === 'input_text' || part.type === 'output_text') text += (part as { text: string }).text
    else {
      // Images and files returned by a tool travel beside the functionResponse (all models accept that).
      const translated = contentPart(part, `${path}.output[${index}]`)
      if (translated) media.push(translated)
    }
  }
  return { response: { result: text }, media }
}

const isSignable = (part: GeminiPart | undefined): part is SignablePart => part !== undefined && ('text' in part || 'functionCall' in part)

class ContentsBuilder {
  readonly contents: GeminiContent[] = []
  /** A signature waiting for the next model part. */
  private pendingSignature: string | undefined

  push(role: 'user' | 'model', part: GeminiPart) {
    // A signature never crosses a user turn.
    if (role === 'user') this.pendingSignature = undefined
    let last = this.contents.at(-1)
    if (last?.role !== role) {
      last = { role, parts: [] }
      this.contents.push(last)
    }
    if (role === 'model' && this.pendingSignature !== undefined && isSignable(part)) {
      part.thoughtSignature = this.pendingSignature
      this.pendingSignature = undefined
    }
    last.parts.push(part)
  }

  /** Places a Gemini thought signature (see the module comment). */
  signature(signature: string, isFunctionCallNext: boolean) {
    const last = this.contents.at(-1)
    const previous = last?.role === 'model' ? last.parts.at(-1) : undefined
    if (!isFunctionCallNext && isSignable(previous) && previous.thoughtSignature === undefined) previous.thoughtSignature = signature
    else this.pendingSignature = signature
  }
}

const isMessage = (item: InputItem): item is MessageItem =>
  item.type === 'message' || (item.type === undefined && typeof (item as { role?: unknown }).role === 'string')

export interface GeminiInput {
  systemInstruction: Array<{ text: string }>
  contents: GeminiContent[]
}

export const translateInput = (request: ResponsesRequest, model: string): GeminiInput => {
  const system: Array<{ text: string }> = []
  if (typeof request.instructions === 'string' && request.instructions !== '') system.push({ text: request.instructions })
  const builder = new ContentsBuilder()
  if (typeof request.input === 'string') {
    builder.push('user', { text: request.input })
    return { systemInstruction: system, contents: builder.contents }
  }

  const items = request.input
  const callNames = new Map<string, string>()
  for (const [index, item] of items.entries()) {
    const path = `input[${index}]`
    if (isMessage(item)) {
      switch (item.role) {
        case 'system':
        case 'developer': {
          const text = systemText(item.content, path)
          if (text !== '') system.push({ text })
          break
        }
        case 'user':
        case 'assistant': {
          const role = item.role === 'user' ? 'user' : 'model'
          for (const part of messageParts(item.content, path)) builder.push(role, part)
          break
        }
        default:
          throw unsupported(path, `message role "${String(item.role)}"`)
      }
      continue
    }
    switch (item.type) {
      case 'function_call': {
        const call = item as FunctionCallItem
        callNames.set(call.call_id, call.name)
        builder.push('model', { functionCall: { id: call.call_id, name: call.name, args: parseArguments(call, path) } })
        break
      }
      case 'function_call_output': {
        const output = item as FunctionCallOutputItem
        const name = callNames.get(output.call_id)
        if (name === undefined) {
          throw new InvalidRequestError(`${path}: function_call_output "${output.call_id}" has no function_call with that call_id earlier in input (Gemini needs the function name)`)
        }
        const { response, media } = functionResponse(output.output, path)
        builder.push('user', { functionResponse: { id: output.call_id, name, response } })
        for (const part of media) builder.push('user', part)
        break
      }
      case 'image_generation_call': {
        const image = item as Partial<OutputImage>
        if (typeof image.result === 'string' && image.result !== '') {
          builder.push('model', { inlineData: { mimeType: imageMediaType(image), data: image.result } })
        }
        break
      }
      case 'reasoning': {
        const reasoning = item as ReasoningItem
        if (reasoning.format === GEMINI_REASONING_FORMAT && typeof reasoning.signature === 'string' && reasoning.signature !== '') {
          builder.signature(reasoning.signature, items[index + 1]?.type === 'function_call')
        }
        break
      }
      case 'web_search_call':
        // A search already made (by Gemini's grounding or another model): Gemini takes no search results back, and
        // what was learned from them is in the answer's text.
        break
      default:
        throw unsupported(path, `item type "${String(item.type)}"`)
    }
  }

  if (isGeminiModel(model) && usesThinkingLevels(model)) {
    // Gemini 3 rejects a step whose first function call has no signature (docs: thought-signatures).
    for (const content of builder.contents) {
      if (content.role !== 'model') continue
      const firstCall = content.parts.find((part) => 'functionCall' in part) as SignablePart | undefined
      if (firstCall && firstCall.thoughtSignature === undefined) firstCall.thoughtSignature = SKIP_SIGNATURE_VALIDATOR
    }
  }
  return { systemInstruction: system, contents: builder.contents }
}
