/**
 * Prompt tokens as context compression counts them (docs/decisions.md, "Plugins"): OpenAI's `o200k_base`
 * encoding (gpt-tokenizer, loaded only when a request needs it), exact for OpenAI's current models; for other
 * families the same count times `OTHER_FAMILY_FACTOR`, since their tokenizers are not public and they split
 * English into somewhat more tokens than o200k does. A count over the truth only compresses a little early.
 */

/** How much more than o200k a non-OpenAI tokenizer may count: Claude, Gemini and Llama run ~5–20 % over on English. */
export const OTHER_FAMILY_FACTOR = 1.2

/** What a request's parts cost beyond their text: per message (role and separators), per image or file. */
export const TOKENS_PER_MESSAGE = 4
export const TOKENS_PER_ATTACHMENT = 1_024

export interface TokenCounter {
  /** Tokens in `text` for this family. */
  count(text: string): number
  /** `text` with its middle cut out so that about `keep` tokens remain, the cut marked. */
  truncateMiddle(text: string, keep: number): string
}

type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base')

// Text is text: a special token's spelling in a prompt is counted as the characters it is, never refused.
const AS_TEXT = { disallowedSpecial: new Set<string>() }

/**
 * Texts are encoded in pieces of at most this many characters, cut at whitespace where there is some: BPE's cost
 * grows faster than linearly with the length of a run without spaces (20,000 `x` take half a second, a megabyte
 * minutes), so a prompt cannot make the gateway spin. A cut inside a word may count a token more: an over-count.
 */
export const PIECE_CHARACTERS = 1_000

/** `text` in pieces of at most `PIECE_CHARACTERS`, each ending after whitespace when the window holds some. */
export const piecesOf = (text: string): string[] => {
  if (text.length <= PIECE_CHARACTERS) return [text]
  const pieces: string[] = []
  let start = 0
  while (start < text.length) {
    let end = Math.min(start + PIECE_CHARACTERS, text.length)
    if (end < text.length) {
      const window = text.slice(start, end)
      const space = Math.max(window.lastIndexOf(' '), window.lastIndexOf('\n'))
      if (space > 0) end = start + space + 1
    }
    pieces.push(text.slice(start, end))
    start = end
  }
  return pieces
}

let loading: Promise<Encoding> | undefined
const loadEncoding = () => (loading ??= import('gpt-tokenizer/encoding/o200k_base'))

/** A counter for a family: exact for OpenAI's (`isOpenAiFamily`), estimated for the others. */
export const loadTokenCounter = async (isOpenAiFamily: boolean): Promise<TokenCounter> => {
  const encoding = await loadEncoding()
  const factor = isOpenAiFamily ? 1 : OTHER_FAMILY_FACTOR
  return {
    count: (text) => (text.length === 0 ? 0 : Math.ceil(piecesOf(text).reduce((sum, piece) => sum + encoding.countTokens(piece, AS_TEXT), 0) * factor)),
    truncateMiddle(text, keep) {
      const tokens = piecesOf(text).flatMap((piece) => encoding.encode(piece, AS_TEXT))
      const kept = Math.max(0, Math.floor(keep / factor))
      if (kept >= tokens.length) return text
      const head = Math.ceil(kept / 2)
      const tail = kept - head
      const removed = tokens.length - kept
      return `${encoding.decode(tokens.slice(0, head))}\n[… ${removed} tokens removed to fit the context window …]\n${tail > 0 ? encoding.decode(tokens.slice(-tail)) : ''}`
    },
  }
}
