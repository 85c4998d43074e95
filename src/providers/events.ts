/**
 * What a stream adapter yields: a closed union, so the engine and the writers narrow each member by its
 * `type` without casts. The item-level members are the Responses events modelgate emits itself
 * (without `sequence_number`: the writer numbers its own stream), generated images' included, since every
 * family's image output is one of them. Item kinds a provider runs itself
 * (OpenAI's `web_search_call.*`, annotation events…) are relayed whole inside one member, so a new
 * upstream event never needs a change here. Two internal members end every stream: usage, then finish.
 */

import type { OutputItem, Usage } from './types'

/** Why generation stopped, in Responses terms. */
export type FinishStatus = 'completed' | 'incomplete'

interface ItemPosition {
  item_id: string
  output_index: number
}

interface PartPosition extends ItemPosition {
  content_index: number
}

interface SummaryPosition extends ItemPosition {
  summary_index: number
}

export type ContentPart = { type: 'output_text'; text: string; annotations: unknown[] } | { type: 'refusal'; refusal: string } | { type: 'reasoning_text'; text: string }

export type SummaryPart = { type: 'summary_text'; text: string }

/**
 * Set on an event relayed as the upstream wrote it: its JSON text, without `sequence_number`, for as long as it
 * still matches the fields (openai-responses/as-sent.ts). A Responses writer sends it rather than serialising,
 * taking `wireJsonOpen` (the same without its closing brace) so as to append its own number without a copy.
 */
type WireText = { readonly wireJson?: string | undefined; readonly wireJsonOpen?: string | undefined }

/** The Responses item-level events, as OpenAI defines them, minus `sequence_number`. */
export type ItemEvent = WireText &
  (
    | { type: 'response.output_item.added'; output_index: number; item: OutputItem }
    | { type: 'response.output_item.done'; output_index: number; item: OutputItem }
    | ({ type: 'response.content_part.added'; part: ContentPart } & PartPosition)
    | ({ type: 'response.content_part.done'; part: ContentPart } & PartPosition)
    | ({ type: 'response.output_text.delta'; delta: string; logprobs: unknown[] } & PartPosition)
    | ({ type: 'response.output_text.done'; text: string; logprobs: unknown[] } & PartPosition)
    | ({ type: 'response.refusal.delta'; delta: string } & PartPosition)
    | ({ type: 'response.refusal.done'; refusal: string } & PartPosition)
    | ({ type: 'response.reasoning_summary_part.added'; part: SummaryPart } & SummaryPosition)
    | ({ type: 'response.reasoning_summary_part.done'; part: SummaryPart } & SummaryPosition)
    | ({ type: 'response.reasoning_summary_text.delta'; delta: string } & SummaryPosition)
    | ({ type: 'response.reasoning_summary_text.done'; text: string } & SummaryPosition)
    | ({ type: 'response.reasoning_text.delta'; delta: string } & PartPosition)
    | ({ type: 'response.reasoning_text.done'; text: string } & PartPosition)
    | ({ type: 'response.function_call_arguments.delta'; delta: string } & ItemPosition)
    | ({ type: 'response.function_call_arguments.done'; name?: string; arguments: string } & ItemPosition)
    | ({ type: 'response.image_generation_call.in_progress' } & ItemPosition)
    | ({ type: 'response.image_generation_call.generating' } & ItemPosition)
    | ({ type: 'response.image_generation_call.partial_image'; partial_image_b64: string; partial_image_index: number } & ItemPosition)
    | ({ type: 'response.image_generation_call.completed' } & ItemPosition)
  )

export type ItemEventType = ItemEvent['type']

/** An upstream event of a kind the provider runs itself, passed on to the client as it came (minus `sequence_number`). */
export type RelayedEvent = { type: string } & Record<string, unknown>

export type UpstreamStreamEvent =
  | ItemEvent
  | { type: 'relayed'; event: RelayedEvent }
  | { type: 'upstream.usage'; usage: Usage }
  /**
   * `stopSequence`: the requested stop sequence that ended the answer, when the upstream says which. `serviceTier`:
   * the processing tier the upstream says it used, as `UpstreamResult.serviceTier`.
   */
  | { type: 'upstream.finish'; status: FinishStatus; incompleteDetails: { reason: string } | null; stopSequence?: string; serviceTier?: string }

const ITEM_EVENT_TYPES: ReadonlySet<string> = new Set<ItemEventType>([
  'response.output_item.added',
  'response.output_item.done',
  'response.content_part.added',
  'response.content_part.done',
  'response.output_text.delta',
  'response.output_text.done',
  'response.refusal.delta',
  'response.refusal.done',
  'response.reasoning_summary_part.added',
  'response.reasoning_summary_part.done',
  'response.reasoning_summary_text.delta',
  'response.reasoning_summary_text.done',
  'response.reasoning_text.delta',
  'response.reasoning_text.done',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'response.image_generation_call.in_progress',
  'response.image_generation_call.generating',
  'response.image_generation_call.partial_image',
  'response.image_generation_call.completed',
])

/** Whether an event type read off a Responses-shaped wire is one of the item-level members. */
export const isItemEventType = (type: string): type is ItemEventType => ITEM_EVENT_TYPES.has(type)

/**
 * An item event's fields as a new plain object, without the upstream's wire text, for a caller that changes some
 * (renumbers it, adds annotations). A spread alone is not enough: an event relayed as sent keeps its fields in its
 * text until read (openai-responses/as-sent.ts), so a spread of it copies its type and nothing else.
 */
export const itemEventFields = <E extends ItemEvent>(event: E): Omit<E, 'wireJson' | 'wireJsonOpen'> => {
  const fields = (event as { toJSON?: () => object }).toJSON?.() ?? event
  const { wireJson: _wireJson, wireJsonOpen: _wireJsonOpen, ...copy } = fields as E
  return copy
}
