/**
 * Builds Responses output items and the exact event sequence clients expect (gaps §2): every
 * delta's item and part are opened first, text and reasoning items are sequential, function calls
 * stay open until the end, and every opened item and part is closed with its `.done` events.
 * Adapters drive it with what the upstream said; the same builder yields non-streaming results.
 */

import { cloneData } from '../../core/clone-data'
import { randomHex } from '../../core/crypto'
import type { ItemEvent } from '../events'
import type { OutputFunctionCall, OutputImage, OutputItem, OutputMessage, OutputReasoning, OutputText } from '../types'
import { TextDeltaEvent } from './text-delta-event'

type Events = ItemEvent[]

interface OpenMessage {
  kind: 'message'
  item: OutputMessage
  outputIndex: number
  /** Index of the open content part in `item.content`, or -1. */
  partIndex: number
}

interface OpenReasoning {
  kind: 'reasoning'
  item: OutputReasoning
  outputIndex: number
  /** Open summary part index, or -1. */
  summaryIndex: number
  /** Open reasoning_text part index, or -1. */
  contentIndex: number
}

interface OpenFunctionCall {
  item: OutputFunctionCall
  outputIndex: number
}

interface OpenWebSearch {
  item: { type: 'web_search_call'; id: string; status: string; action?: Record<string, unknown> }
  outputIndex: number
}

/** Where an annotation went: what a stream's `response.output_text.annotation.added` names. */
export interface AnnotationPosition {
  item_id: string
  output_index: number
  content_index: number
  annotation_index: number
}

const newId = (prefix: string) => `${prefix}_${randomHex(16)}`

export interface OutputBuilder {
  /** Items in output order (complete once `finish` ran). */
  readonly items: OutputItem[]
  /** `logprobs`: the log probabilities of the delta's tokens (OpenAI's shape), when the upstream sent them. */
  text(delta: string, logprobs?: readonly unknown[]): Events
  refusal(delta: string): Events
  reasoningSummary(delta: string, format?: string): Events
  reasoningText(delta: string, format?: string): Events
  /** Attaches the provider's signature to the current (or a new) reasoning item. */
  reasoningSignature(signature: string, format?: string): Events
  /** Records opaque reasoning (e.g. Anthropic redacted thinking) on the current reasoning item. */
  reasoningEncrypted(data: string, format?: string): Events
  /** Closes the current reasoning item, so the next reasoning starts a new one (one per upstream block). */
  endReasoning(): Events
  /** Opens the function call known upstream by `key` (a tool-call index or id), once. */
  functionCall(key: string | number, call: { callId?: string; name?: string }): Events
  functionCallArguments(key: string | number, delta: string): Events
  /**
   * A whole generated image (`data` base64, `mediaType` `image/png`…), as one `image_generation_call` item with
   * OpenAI's event sequence for it. It ends the text or reasoning before it, so output order is the upstream's.
   */
  image(data: string, mediaType: string): Events
  /**
   * Opens a web search the provider runs itself, known upstream by `key`, as a `web_search_call` item (OpenAI's
   * shape); it ends the text or reasoning before it. Its position, for the stream's `web_search_call.*` events.
   */
  webSearchCall(key: string): { events: Events; item_id: string; output_index: number }
  /** Ends that search: `completed` with what it searched and found (`action`), or `failed`. */
  webSearchDone(key: string, status: 'completed' | 'failed', action?: Record<string, unknown>): Events
  /** The text the next `text` delta extends: the open text part's, else '' (it starts a part). */
  readonly openText: string
  /** Its length: where the next `text` delta lands in its part. */
  readonly textOffset: number
  /** Adds an annotation (a `url_citation`…) to the open text part; where it went, or undefined when none is open. */
  annotate(annotation: Record<string, unknown>): AnnotationPosition | undefined
  /** Whether anything was emitted yet. */
  readonly hasOutput: boolean
  /** Closes everything that is open. `incomplete` marks the last open message as cut short. */
  finish(status?: 'completed' | 'incomplete'): Events
}

export const createOutputBuilder = (): OutputBuilder => {
  const items: OutputItem[] = []
  let sequential: OpenMessage | OpenReasoning | null = null
  const calls = new Map<string | number, OpenFunctionCall>()
  const openCalls: OpenFunctionCall[] = []
  const searches = new Map<string, OpenWebSearch>()

  const closeMessagePart = (open: OpenMessage): Events => {
    if (open.partIndex < 0) return []
    const part = open.item.content[open.partIndex]!
    const base = { item_id: open.item.id, output_index: open.outputIndex, content_index: open.partIndex }
    open.partIndex = -1
    const done: Events =
      part.type === 'output_text'
        ? [{ type: 'response.output_text.done', ...base, text: part.text, logprobs: part.logprobs ? [...part.logprobs] : [] }]
        : [{ type: 'response.refusal.done', ...base, refusal: part.refusal }]
    return [...done, { type: 'response.content_part.done', ...base, part: cloneData(part) }]
  }

  const closeReasoningParts = (open: OpenReasoning): Events => {
    const events: Events = []
    const base = { item_id: open.item.id, output_index: open.outputIndex }
    if (open.summaryIndex >= 0) {
      const part = open.item.summary[open.summaryIndex]!
      events.push(
        { type: 'response.reasoning_summary_text.done', ...base, summary_index: open.summaryIndex, text: part.text },
        { type: 'response.reasoning_summary_part.done', ...base, summary_index: open.summaryIndex, part: { ...part } },
      )
      open.summaryIndex = -1
    }
    if (open.contentIndex >= 0) {
      const part = open.item.content![open.contentIndex]!
      events.push(
        { type: 'response.reasoning_text.done', ...base, content_index: open.contentIndex, text: part.text },
        { type: 'response.content_part.done', ...base, content_index: open.contentIndex, part: { ...part } },
      )
      open.contentIndex = -1
    }
    return events
  }

  const closeSequential = (status: 'completed' | 'incomplete' = 'completed'): Events => {
    const open = sequential
    if (!open) return []
    sequential = null
    const events = open.kind === 'message' ? closeMessagePart(open) : closeReasoningParts(open)
    open.item.status = status
    events.push({ type: 'response.output_item.done', output_index: open.outputIndex, item: cloneData(open.item) })
    return events
  }

  const openItem = (item: OutputItem): { events: Events; outputIndex: number } => {
    const outputIndex = items.length
    items.push(item)
    return { events: [{ type: 'response.output_item.added', output_index: outputIndex, item: cloneData(item) }], outputIndex }
  }

  const message = (): { open: OpenMessage; events: Events } => {
    if (sequential?.kind === 'message') return { open: sequential, events: [] }
    const events = closeSequential()
    const item: OutputMessage = { id: newId('msg'), type: 'message', role: 'assistant', status: 'in_progress', content: [] }
    const opened = openItem(item)
    sequential = { kind: 'message', item, outputIndex: opened.outputIndex, partIndex: -1 }
    return { open: sequential, events: [...events, ...opened.events] }
  }

  const reasoning = (format?: string): { open: OpenReasoning; events: Events } => {
    if (sequential?.kind === 'reasoning') {
      if (format && !sequential.item.format) sequential.item.format = format
      return { open: sequential, events: [] }
    }
    const events = closeSequential()
    const item: OutputReasoning = { id: newId('rs'), type: 'reasoning', summary: [], ...(format ? { format } : {}) }
    const opened = openItem(item)
    sequential = { kind: 'reasoning', item, outputIndex: opened.outputIndex, summaryIndex: -1, contentIndex: -1 }
    return { open: sequential, events: [...events, ...opened.events] }
  }

  const messagePart = (kind: 'output_text' | 'refusal'): { open: OpenMessage; events: Events } => {
    const { open, events } = message()
    const current = open.partIndex >= 0 ? open.item.content[open.partIndex] : undefined
    if (current?.type === kind) return { open, events }
    events.push(...closeMessagePart(open))
    // `logprobs` is always there (Open Responses requires it on output text): empty unless the upstream sent some.
    const part = kind === 'output_text' ? { type: 'output_text' as const, text: '', annotations: [], logprobs: [] } : { type: 'refusal' as const, refusal: '' }
    open.item.content.push(part)
    open.partIndex = open.item.content.length - 1
    events.push({
      type: 'response.content_part.added',
      item_id: open.item.id,
      output_index: open.outputIndex,
      content_index: open.partIndex,
      part: { ...part },
    })
    return { open, events }
  }

  const endSearch = (key: string, status: 'completed' | 'failed', action?: Record<string, unknown>): Events => {
    const open = searches.get(key)
    if (!open) return []
    searches.delete(key)
    open.item.status = status
    if (action) open.item.action = action
    return [{ type: 'response.output_item.done', output_index: open.outputIndex, item: cloneData(open.item) }]
  }

  return {
    items,
    get hasOutput() {
      return items.length > 0
    },

    text(delta, logprobs) {
      if (delta === '') return []
      const { open, events } = messagePart('output_text')
      const part = open.item.content[open.partIndex] as OutputText
      part.text += delta
      const event = new TextDeltaEvent(open.item.id, open.outputIndex, open.partIndex, delta)
      if (logprobs && logprobs.length > 0) {
        ;(part.logprobs ??= []).push(...logprobs)
        event.logprobs = [...logprobs]
      }
      events.push(event)
      return events
    },

    refusal(delta) {
      if (delta === '') return []
      const { open, events } = messagePart('refusal')
      const part = open.item.content[open.partIndex] as { refusal: string }
      part.refusal += delta
      events.push({ type: 'response.refusal.delta', item_id: open.item.id, output_index: open.outputIndex, content_index: open.partIndex, delta })
      return events
    },

    reasoningSummary(delta, format) {
      if (delta === '') return []
      const { open, events } = reasoning(format)
      if (open.summaryIndex < 0) {
        open.item.summary.push({ type: 'summary_text', text: '' })
        open.summaryIndex = open.item.summary.length - 1
        events.push({
          type: 'response.reasoning_summary_part.added',
          item_id: open.item.id,
          output_index: open.outputIndex,
          summary_index: open.summaryIndex,
          part: { type: 'summary_text', text: '' },
        })
      }
      open.item.summary[open.summaryIndex]!.text += delta
      events.push({
        type: 'response.reasoning_summary_text.delta',
        item_id: open.item.id,
        output_index: open.outputIndex,
        summary_index: open.summaryIndex,
        delta,
      })
      return events
    },

    reasoningText(delta, format) {
      if (delta === '') return []
      const { open, events } = reasoning(format)
      if (open.contentIndex < 0) {
        open.item.content ??= []
        open.item.content.push({ type: 'reasoning_text', text: '' })
        open.contentIndex = open.item.content.length - 1
        events.push({
          type: 'response.content_part.added',
          item_id: open.item.id,
          output_index: open.outputIndex,
          content_index: open.contentIndex,
          part: { type: 'reasoning_text', text: '' },
        })
      }
      open.item.content![open.contentIndex]!.text += delta
      events.push({
        type: 'response.reasoning_text.delta',
        item_id: open.item.id,
        output_index: open.outputIndex,
        content_index: open.contentIndex,
        delta,
      })
      return events
    },

    reasoningSignature(signature, format) {
      const { open, events } = reasoning(format)
      open.item.signature = (open.item.signature ?? '') + signature
      return events
    },

    reasoningEncrypted(data, format) {
      const { open, events } = reasoning(format)
      open.item.encrypted_content = (open.item.encrypted_content ?? '') + data
      return events
    },

    endReasoning() {
      return sequential?.kind === 'reasoning' ? closeSequential() : []
    },

    functionCall(key, call) {
      const existing = calls.get(key)
      if (existing) {
        if (call.name && !existing.item.name) existing.item.name = call.name
        if (call.callId && !existing.item.call_id) existing.item.call_id = call.callId
        return []
      }
      // Text and reasoning are sequential: a tool call ends them.
      const events = closeSequential()
      const item: OutputFunctionCall = {
        id: newId('fc'),
        type: 'function_call',
        status: 'in_progress',
        call_id: call.callId ?? newId('call'),
        name: call.name ?? '',
        arguments: '',
      }
      const opened = openItem(item)
      const open = { item, outputIndex: opened.outputIndex }
      calls.set(key, open)
      openCalls.push(open)
      return [...events, ...opened.events]
    },

    functionCallArguments(key, delta) {
      const open = calls.get(key)
      if (!open) throw new Error(`output builder: no function call ${String(key)} is open`)
      if (delta === '') return []
      open.item.arguments += delta
      return [{ type: 'response.function_call_arguments.delta', item_id: open.item.id, output_index: open.outputIndex, delta }]
    },

    image(data, mediaType) {
      const events = closeSequential()
      const format = mediaType.toLowerCase().replace(/^image\//, '')
      const item: OutputImage = { id: newId('ig'), type: 'image_generation_call', status: 'in_progress', result: null, ...(format ? { output_format: format } : {}) }
      const opened = openItem(item)
      const position = { item_id: item.id, output_index: opened.outputIndex }
      item.status = 'completed'
      item.result = data
      events.push(
        ...opened.events,
        { type: 'response.image_generation_call.in_progress', ...position },
        { type: 'response.image_generation_call.generating', ...position },
        { type: 'response.image_generation_call.completed', ...position },
        { type: 'response.output_item.done', output_index: opened.outputIndex, item: structuredClone(item) },
      )
      return events
    },

    webSearchCall(key) {
      const events = closeSequential()
      const item: OpenWebSearch['item'] = { id: newId('ws'), type: 'web_search_call', status: 'in_progress' }
      const opened = openItem(item)
      searches.set(key, { item, outputIndex: opened.outputIndex })
      return { events: [...events, ...opened.events], item_id: item.id, output_index: opened.outputIndex }
    },

    webSearchDone: endSearch,

    get openText() {
      if (sequential?.kind !== 'message' || sequential.partIndex < 0) return ''
      const part = sequential.item.content[sequential.partIndex]!
      return part.type === 'output_text' ? part.text : ''
    },

    get textOffset() {
      return this.openText.length
    },

    annotate(annotation) {
      if (sequential?.kind !== 'message' || sequential.partIndex < 0) return undefined
      const part = sequential.item.content[sequential.partIndex]!
      if (part.type !== 'output_text') return undefined
      part.annotations.push(annotation)
      return { item_id: sequential.item.id, output_index: sequential.outputIndex, content_index: sequential.partIndex, annotation_index: part.annotations.length - 1 }
    },

    finish(status = 'completed') {
      const events = closeSequential(status)
      // A search the upstream started but never answered did not complete.
      for (const key of [...searches.keys()]) events.push(...endSearch(key, 'failed'))
      for (const open of openCalls.splice(0)) {
        open.item.status = 'completed'
        events.push(
          {
            type: 'response.function_call_arguments.done',
            item_id: open.item.id,
            output_index: open.outputIndex,
            name: open.item.name,
            arguments: open.item.arguments,
          },
          { type: 'response.output_item.done', output_index: open.outputIndex, item: cloneData(open.item) },
        )
      }
      calls.clear()
      return events
    },
  }
}
