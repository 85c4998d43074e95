/**
 * `url_citation` annotations on the final answer (docs/decisions.md, "Server tools"): every place the answer's
 * text names the URL of a page a server tool found is annotated with that page, as OpenAI annotates its own
 * web search answers (`{type, url, title, start_index, end_index}`, indexes in characters of the text).
 */

import type { OutputItem, OutputText } from '../../providers/types'
import type { CitableSource } from './contract'

export interface UrlCitation {
  type: 'url_citation'
  url: string
  title: string
  start_index: number
  end_index: number
}

// A URL ends where the text stops looking like one: whitespace, or closing punctuation of markdown and prose.
const isUrlEnd = (character: string | undefined) => character === undefined || /[\s)\]>"'`]/.test(character)

/** The annotations of `text`: each whole occurrence of a source's URL, in the order they appear. */
export const citationsIn = (text: string, sources: readonly CitableSource[]): UrlCitation[] => {
  const citations: UrlCitation[] = []
  const seen = new Set<string>()
  for (const source of sources) {
    if (seen.has(source.url)) continue
    seen.add(source.url)
    for (let start = text.indexOf(source.url); start >= 0; start = text.indexOf(source.url, start + 1)) {
      const end = start + source.url.length
      // `https://a.test/x` must not be found inside `https://a.test/xy`; a trailing `/` or `.` ends a sentence, not the URL.
      if (!isUrlEnd(text[end]) && !(/[/.,;:!?]/.test(text[end]!) && isUrlEnd(text[end + 1]))) continue
      citations.push({ type: 'url_citation', url: source.url, title: source.title, start_index: start, end_index: end })
    }
  }
  return citations.sort((left, right) => left.start_index - right.start_index)
}

/** The items with their messages' text annotated; the same items when there is nothing to cite. */
export const withCitations = (items: OutputItem[], sources: readonly CitableSource[]): OutputItem[] => {
  if (sources.length === 0) return items
  return items.map((item) => {
    if (item.type !== 'message' || !Array.isArray(item.content)) return item
    const content = (item.content as Array<OutputText | { type: string }>).map((part) => {
      if (part.type !== 'output_text') return part
      const text = part as OutputText
      const citations = citationsIn(text.text, sources)
      return citations.length === 0 ? part : { ...text, annotations: [...text.annotations, ...citations] }
    })
    return { ...item, content } as OutputItem
  })
}
