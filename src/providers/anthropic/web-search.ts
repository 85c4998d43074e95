/**
 * Claude's own web search (`web_search_20250305`, a server tool Anthropic runs inside one Messages call) in the
 * Responses shape: the tool as the native search asks for it; each `server_tool_use` of `web_search` with its
 * `web_search_tool_result` as one `web_search_call` item (`action: {type: "search", query, sources}`), and each
 * `web_search_result_location` citation of a text block as a `url_citation` over that block's text. A result's
 * `encrypted_content` (what Claude would need to read the page again) is not kept, so a `web_search_call` sent
 * back in a later request's input is left out: the answer's text keeps what was learned.
 * Reference: https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 */

import type { AnnotationPosition, OutputBuilder } from '../shared/output-builder'
import type { ItemEvent, RelayedEvent } from '../events'
import type { NativeWebSearch } from '../types'
import { isRecord, type WebSearchToolParam, type WireContentBlock } from './wire'

/** Anthropic takes domains without a scheme, subdomains included, with or without a path: the entries as they are. */
export const webSearchTool = (search: NativeWebSearch): WebSearchToolParam => ({
  type: 'web_search_20250305',
  name: 'web_search',
  ...(search.maxUses !== undefined ? { max_uses: search.maxUses } : {}),
  ...(search.allowedDomains ? { allowed_domains: [...search.allowedDomains] } : {}),
  ...(search.blockedDomains ? { blocked_domains: [...search.blockedDomains] } : {}),
  ...(search.userLocation ? { user_location: { ...search.userLocation } } : {}),
})

type Output = Array<ItemEvent | { type: 'relayed'; event: RelayedEvent }>

const relayed = (type: string, position: { item_id: string; output_index: number }): { type: 'relayed'; event: RelayedEvent } => ({
  type: 'relayed',
  event: { type, item_id: position.item_id, output_index: position.output_index },
})

const queryOf = (input: unknown): string => (isRecord(input) && typeof input.query === 'string' ? input.query : '')

/** The web searches and citations of one answer, fed block by block (whole or streamed) into `builder`. */
export const createWebSearchReader = (builder: OutputBuilder) => {
  const searches = new Map<string, { item_id: string; output_index: number; query: string }>()
  let text: { offset: number; citations: Array<Record<string, unknown>> } | undefined

  return {
    /** Whether a `server_tool_use` block is a web search. */
    isSearch: (block: WireContentBlock): boolean => block.type === 'server_tool_use' && block.name === 'web_search' && typeof block.id === 'string',

    /** A web search starts (its query may come later, streamed). */
    start(id: string): Output {
      const { events, ...position } = builder.webSearchCall(id)
      searches.set(id, { ...position, query: '' })
      return [...events, relayed('response.web_search_call.in_progress', position)]
    },

    /** Its input is complete: the query is known and the search runs. */
    searching(id: string, input: unknown): Output {
      const search = searches.get(id)
      if (!search) return []
      search.query = queryOf(input)
      return [relayed('response.web_search_call.searching', search)]
    },

    /** Its result: the pages found, or an error object (`web_search_tool_result_error`). */
    result(block: WireContentBlock): Output {
      const id = typeof block.tool_use_id === 'string' ? block.tool_use_id : ''
      const search = searches.get(id)
      if (!search) return []
      searches.delete(id)
      if (!Array.isArray(block.content)) return builder.webSearchDone(id, 'failed', { type: 'search', query: search.query })
      const sources = block.content.flatMap((page) => (isRecord(page) && typeof page.url === 'string' ? [{ type: 'url', url: page.url }] : []))
      return [relayed('response.web_search_call.completed', search), ...builder.webSearchDone(id, 'completed', { type: 'search', query: search.query, sources })]
    },

    /** A text block starts: its citations cover the text it adds to the current part. */
    textStart(block: WireContentBlock): void {
      text = { offset: builder.textOffset, citations: [] }
      if (Array.isArray(block.citations)) for (const citation of block.citations) this.citation(citation)
    },

    citation(citation: unknown): void {
      if (text && isRecord(citation) && citation.type === 'web_search_result_location' && typeof citation.url === 'string') text.citations.push(citation)
    },

    /** The text block ended: its citations become `url_citation`s over its text (character indexes of the part). */
    textStop(): Output {
      const open = text
      text = undefined
      if (!open || open.citations.length === 0) return []
      const end = builder.textOffset
      if (end <= open.offset) return []
      const events: Output = []
      for (const citation of open.citations) {
        const annotation = { type: 'url_citation', url: citation.url, title: typeof citation.title === 'string' ? citation.title : '', start_index: open.offset, end_index: end }
        const position: AnnotationPosition | undefined = builder.annotate(annotation)
        if (position) events.push({ type: 'relayed', event: { type: 'response.output_text.annotation.added', ...position, annotation } })
      }
      return events
    },
  }
}

export type WebSearchReader = ReturnType<typeof createWebSearchReader>
