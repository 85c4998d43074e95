/**
 * OpenAI's `o200k_base` encoding (gpt-tokenizer), loaded only when something needs it, and the one way this
 * gateway feeds text to it: in pieces of bounded length, so no input makes the encoder spin (docs/decisions.md,
 * "Plugins").
 */

export type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base')

/** Text is text: a special token's spelling in a prompt is counted as the characters it is, never refused. */
export const AS_TEXT = { disallowedSpecial: new Set<string>() }

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

/** The encoding, loaded on first use. */
export const loadEncoding = (): Promise<Encoding> => (loading ??= import('gpt-tokenizer/encoding/o200k_base'))

/** Tokens in `text` by the encoding, piece by piece. */
export const countTokens = (encoding: Encoding, text: string): number =>
  text.length === 0 ? 0 : piecesOf(text).reduce((sum, piece) => sum + encoding.countTokens(piece, AS_TEXT), 0)
