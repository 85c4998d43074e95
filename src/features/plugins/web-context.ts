/**
 * What the web plugins (`web`, `web-fetch`) share: the user's last message, the system message that hands the
 * model what was found (inserted before that message, as OpenRouter does), and the answer's `url_citation`
 * annotations and usage (web search requests and their price), whole or streamed.
 */

import type { OutputItem, OutputText } from '../../providers/types'
import type { BilledUsage } from '../../engine/billing'
import { withCitations, citationsIn } from '../server-tools/citations'
import type { CitableSource } from '../server-tools/contract'
import type { ServerToolUseDetails } from '../server-tools/usage'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { ResponseResult, SessionEvent } from '../../engine/session-events'

type Item = { type?: string; role?: string; content?: unknown }

/** The text of the last user message, and its place; none when the input has no user text. */
export const lastUserText = (input: ResponsesRequestBody['input']): { index: number; text: string } | undefined => {
  if (typeof input === 'string') return input.trim() ? { index: -1, text: input } : undefined
  for (let index = input.length - 1; index >= 0; index--) {
    const item = input[index] as Item
    if ((item.type !== undefined && item.type !== 'message') || item.role !== 'user') continue
    const text =
      typeof item.content === 'string'
        ? item.content
        : Array.isArray(item.content)
          ? (item.content as Array<{ type?: string; text?: unknown }>).flatMap((part) => (part.type === 'input_text' && typeof part.text === 'string' ? [part.text] : [])).join('\n')
          : ''
    if (text.trim()) return { index, text }
  }
  return undefined
}

/** The input with a system message of `text` just before the user message at `index` (-1: a string input). */
export const withContextMessage = (input: ResponsesRequestBody['input'], index: number, text: string): ResponsesRequestBody['input'] => {
  const message = { type: 'message' as const, role: 'system' as const, content: text }
  if (typeof input === 'string') return [message, { type: 'message', role: 'user', content: input }] as ResponsesRequestBody['input']
  return [...input.slice(0, index), message, ...input.slice(index)] as ResponsesRequestBody['input']
}

/** What the web plugins found and spent, added to the answer. */
export interface WebFindings {
  sources: CitableSource[]
  webSearchRequests: number
  /** Dollars, added to the response's cost. */
  cost: number
}

// As billing.ts: dollars kept to 12 decimal places.
const round = (amount: number) => Math.round(amount * 1e12) / 1e12

/** The usage with the searches counted and priced (`server_tool_use_details`, as server tools report it). */
export const withWebUsage = (usage: BilledUsage | null, findings: WebFindings): BilledUsage | null => {
  if (!usage || (findings.webSearchRequests === 0 && findings.cost === 0)) return usage
  const details = (usage as BilledUsage & { server_tool_use_details?: ServerToolUseDetails }).server_tool_use_details
  return {
    ...usage,
    cost: round(usage.cost + findings.cost),
    server_tool_use_details: {
      tool_calls_requested: details?.tool_calls_requested ?? 0,
      tool_calls_executed: details?.tool_calls_executed ?? 0,
      web_search_requests: (details?.web_search_requests ?? 0) + findings.webSearchRequests,
    },
  } as BilledUsage
}

/** A whole answer with its citations and the web usage. */
export const withWebFindings = (result: ResponseResult, findings: WebFindings): ResponseResult => ({
  ...result,
  output: withCitations(result.output, findings.sources),
  usage: withWebUsage(result.usage, findings),
})

const annotatedPart = <P extends { type: string }>(part: P, findings: WebFindings): P => {
  if (part.type !== 'output_text') return part
  const text = part as unknown as OutputText
  const citations = citationsIn(text.text, findings.sources)
  return citations.length === 0 ? part : ({ ...text, annotations: [...text.annotations, ...citations] } as unknown as P)
}

/**
 * A streamed answer's event with the same: citations on the finished text parts, items and response (changed in
 * place), announced by `annotation.added` events before each text's `done` (returned), the usage priced.
 */
export const addWebFindings = (event: SessionEvent, findings: WebFindings): SessionEvent[] | void => {
  switch (event.type) {
    case 'response.output_text.done': {
      // Announced as OpenAI's own web search does, before the text's end; the part and item below carry them too.
      const citations = citationsIn(event.text, findings.sources)
      return citations.map((annotation, index) => ({
        type: 'relayed',
        event: {
          type: 'response.output_text.annotation.added',
          item_id: event.item_id,
          output_index: event.output_index,
          content_index: event.content_index,
          annotation_index: index,
          annotation,
        },
      }))
    }
    case 'response.content_part.done': {
      const part = annotatedPart(event.part, findings)
      if (part === event.part) return
      event.part = part
      // The upstream's own text of the event no longer says what it carries.
      delete (event as { wireJson?: string }).wireJson
      return
    }
    case 'response.output_item.done': {
      const [item] = withCitations([event.item], findings.sources) as [OutputItem]
      if (item === event.item) return
      event.item = item
      delete (event as { wireJson?: string }).wireJson
      return
    }
    case 'usage': {
      event.usage = withWebUsage(event.usage, findings)!
      return
    }
    case 'finished':
      event.result = withWebFindings(event.result, findings)
      return
    default:
  }
}
