/**
 * Gemini's own web search (the `google_search` tool, "grounding with Google Search") in the Responses shape. The
 * candidate's `groundingMetadata` says what was searched (`webSearchQueries`), what was found (`groundingChunks`,
 * `{web: {uri, title}}`; the URIs are Google's redirect links to the pages, as Gemini gives them) and which text
 * each page supports (`groundingSupports`: a `segment` with its `text` and the chunks' indexes). Each query becomes
 * a `web_search_call` (`action: {type: "search", query, sources}`, every query listing the pages of the answer, as
 * Gemini does not say which query found which) and each supported segment a `url_citation` per page. Gemini sends
 * the metadata with the end of the answer, so the searches come after the text in both paths; segments are found
 * in the text by their own words (Gemini's indexes count UTF-8 bytes of a part, not characters of the text).
 * Reference: https://ai.google.dev/gemini-api/docs/google-search
 */

import type { OutputBuilder } from '../shared/output-builder'
import type { ItemEvent, RelayedEvent } from '../events'
import type { GeminiGroundingMetadata } from './wire'

type Output = Array<ItemEvent | { type: 'relayed'; event: RelayedEvent }>

const relayed = (type: string, position: { item_id: string; output_index: number }): { type: 'relayed'; event: RelayedEvent } => ({
  type: 'relayed',
  event: { type, item_id: position.item_id, output_index: position.output_index },
})

/** Keeps the latest grounding metadata of an answer (a stream repeats or completes it) and turns it into output at the end. */
export const createGroundingReader = (builder: OutputBuilder) => {
  let metadata: GeminiGroundingMetadata | undefined
  return {
    note(value: GeminiGroundingMetadata | undefined): void {
      if (value && typeof value === 'object') metadata = value
    },

    /** The citations of the open text: call while the answer's text is still open. */
    cite(): Output {
      if (!metadata) return []
      const text = builder.openText
      const events: Output = []
      const chunks = Array.isArray(metadata.groundingChunks) ? metadata.groundingChunks : []
      const pages = chunks.map((chunk) => (chunk && typeof chunk.web?.uri === 'string' ? { url: chunk.web.uri, title: typeof chunk.web.title === 'string' ? chunk.web.title : '' } : undefined))
      let from = 0
      for (const support of Array.isArray(metadata.groundingSupports) ? metadata.groundingSupports : []) {
        if (!support) continue
        const segment = typeof support.segment?.text === 'string' ? support.segment.text : ''
        const start = segment === '' ? -1 : text.indexOf(segment, from)
        if (start < 0) continue
        from = start
        for (const index of Array.isArray(support.groundingChunkIndices) ? support.groundingChunkIndices : []) {
          const page = typeof index === 'number' ? pages[index] : undefined
          if (!page) continue
          const annotation = { type: 'url_citation', url: page.url, title: page.title, start_index: start, end_index: start + segment.length }
          const position = builder.annotate(annotation)
          if (position) events.push({ type: 'relayed', event: { type: 'response.output_text.annotation.added', ...position, annotation } })
        }
      }
      return events
    },

    /** One `web_search_call` per query, after everything else of the answer. */
    searches(): Output {
      if (!metadata) return []
      const events: Output = []
      const chunks = Array.isArray(metadata.groundingChunks) ? metadata.groundingChunks : []
      const sources = chunks.flatMap((chunk) => (chunk && typeof chunk.web?.uri === 'string' ? [{ type: 'url', url: chunk.web.uri }] : []))
      const queries = Array.isArray(metadata.webSearchQueries) ? metadata.webSearchQueries.filter((query): query is string => typeof query === 'string') : []
      for (const [index, query] of queries.entries()) {
        const key = `grounding_${index}`
        const { events: opened, ...position } = builder.webSearchCall(key)
        events.push(
          ...opened,
          relayed('response.web_search_call.in_progress', position),
          relayed('response.web_search_call.searching', position),
          relayed('response.web_search_call.completed', position),
          ...builder.webSearchDone(key, 'completed', { type: 'search', query, sources }),
        )
      }
      metadata = undefined
      return events
    },
  }
}
