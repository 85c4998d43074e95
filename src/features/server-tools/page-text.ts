/**
 * A fetched page as text a model reads well: HTML through Mozilla's Readability (the reader view's extractor,
 * which drops navigation, ads and boilerplate) over linkedom's DOM, then its blocks as lines, headings marked
 * `#`, list items `-`. Both libraries load on first use, so a gateway that never fetches a page never loads them.
 */

type Dom = typeof import('linkedom')
type ReadabilityModule = typeof import('@mozilla/readability')

let libraries: Promise<[Dom, ReadabilityModule]> | undefined
const load = () => (libraries ??= Promise.all([import('linkedom'), import('@mozilla/readability')]))

const BLOCKS = new Set([
  'ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'DD', 'DIV', 'DL', 'DT', 'FIGCAPTION', 'FIGURE', 'FOOTER', 'FORM', 'H1', 'H2', 'H3',
  'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI', 'MAIN', 'NAV', 'OL', 'P', 'PRE', 'SECTION', 'TABLE', 'TR', 'UL',
])
const SKIPPED = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'IFRAME'])

interface DomNode {
  nodeType: number
  nodeName: string
  textContent: string | null
  firstChild: DomNode | null
  nextSibling: DomNode | null
}

/** The text of a DOM subtree, one line per block. */
const blockText = (root: DomNode): string => {
  const lines: string[] = []
  let line = ''
  const breakLine = () => {
    const text = line.replace(/\s+/g, ' ').trim()
    if (text !== '') lines.push(text)
    line = ''
  }
  const walk = (node: DomNode) => {
    if (node.nodeType === 3) {
      line += node.textContent ?? ''
      return
    }
    if (node.nodeType !== 1 || SKIPPED.has(node.nodeName)) return
    if (node.nodeName === 'BR') return breakLine()
    const isBlock = BLOCKS.has(node.nodeName)
    if (isBlock) breakLine()
    if (/^H[1-6]$/.test(node.nodeName)) line += `${'#'.repeat(Number(node.nodeName[1]))} `
    else if (node.nodeName === 'LI') line += '- '
    // linkedom builds `childNodes` anew on every read: walking siblings keeps this linear in the page.
    for (let child = node.firstChild; child; child = child.nextSibling) walk(child)
    if (isBlock) breakLine()
  }
  walk(root)
  breakLine()
  return lines.join('\n')
}

export interface PageText {
  title: string
  text: string
}

/** A page's text, or the limit reading it went past (a worker's time or heap). */
export type PageTextOutcome = { ok: true; page: PageText } | { ok: false; limit: 'time' | 'memory' } | { ok: false; limit?: undefined; problem: 'unreadable' }

/**
 * Reads a fetched HTML page's text. The gateway's default runs `htmlToText` on its worker pool (src/workers/):
 * parsing a 2 MiB page takes the better part of a second, which no other request should wait for.
 */
export type PageTextReader = (html: string, signal: AbortSignal) => Promise<PageTextOutcome>

/** The reader where no worker threads are: `htmlToText` in the gateway's own thread. */
export const inProcessPageText: PageTextReader = async (html) => ({ ok: true, page: await htmlToText(html) })

/**
 * Elements Readability reads at most: past it, the whole body's text is used. Readability's work grows faster than
 * the page (200 000 tiny elements take minutes), so a larger page is read the linear way (docs/decisions.md, "No
 * tenant can stall the gateway"). The page itself is capped by `serverTools.webFetch.maxBytes`.
 */
export const READABILITY_MAX_ELEMENTS = 10_000

/** A document for `html`, with an `<html>` and a `<body>` even when the page is a bare fragment or plain text. */
const parseDocument = (parseHTML: Dom['parseHTML'], html: string) => {
  const { document } = parseHTML(html)
  if (document.documentElement && document.body) return document
  return parseHTML(`<!doctype html><html><head></head><body>${html}</body></html>`).document
}

/**
 * The readable text of an HTML page: the article Readability finds in it, or else (no article, an empty one, a page
 * too large for it) the whole body's text, so a small plain page (`<p>Page body text</p>`) is never read as empty.
 */
export const htmlToText = async (html: string): Promise<PageText> => {
  const [{ parseHTML }, { Readability }] = await load()
  const document = parseDocument(parseHTML, html)
  const title = (document.title ?? '').trim()
  let article: ReturnType<InstanceType<ReadabilityModule['Readability']>['parse']> = null
  // Readability's own element cap counts with getElementsByTagName('*'), which linkedom answers with nothing.
  const isReadable = document.querySelectorAll('*').length <= READABILITY_MAX_ELEMENTS
  if (isReadable) {
    try {
      article = new Readability(document as unknown as Document, { charThreshold: 200 }).parse()
    } catch {
      article = null
    }
  }
  if (article?.content) {
    const { document: articleDocument } = parseHTML(`<!doctype html><html><body>${article.content}</body></html>`)
    const text = blockText(articleDocument.body as unknown as DomNode)
    if (text !== '') return { title: article.title?.trim() || title, text }
  }
  // Readability changes the document it reads: the fallback reads a fresh one, unless Readability never ran.
  const whole = isReadable ? parseDocument(parseHTML, html) : document
  const text = whole.body ? blockText(whole.body as unknown as DomNode) : ''
  return { title, text: text !== '' ? text : blockText(whole.documentElement as unknown as DomNode) }
}
