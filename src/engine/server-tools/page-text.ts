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
  childNodes: ArrayLike<DomNode>
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
    for (let index = 0; index < node.childNodes.length; index++) walk(node.childNodes[index]!)
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

/** The readable text of an HTML page; the whole body's text when Readability finds no article in it. */
export const htmlToText = async (html: string): Promise<PageText> => {
  const [{ parseHTML }, { Readability }] = await load()
  const { document } = parseHTML(html)
  const title = (document.title ?? '').trim()
  // Readability changes the document it reads; the fallback reads a fresh one.
  const article = new Readability(document as unknown as Document, { charThreshold: 200 }).parse()
  if (article?.content) {
    const { document: articleDocument } = parseHTML(`<!doctype html><html><body>${article.content}</body></html>`)
    const text = blockText(articleDocument.body as unknown as DomNode)
    if (text !== '') return { title: article.title?.trim() || title, text }
  }
  const { document: whole } = parseHTML(html)
  return { title, text: whole.body ? blockText(whole.body as unknown as DomNode) : '' }
}
