/**
 * Prompt tokens as context compression counts them (docs/decisions.md, "Plugins"): OpenAI's `o200k_base`
 * encoding (gpt-tokenizer, loaded only when a request needs it), exact for OpenAI's current models; for other
 * families the same count times `OTHER_FAMILY_FACTOR`, since their tokenizers are not public and they split
 * English into somewhat more tokens than o200k does. A count over the truth only compresses a little early.
 */

import { AS_TEXT, countTokens, loadEncoding, piecesOf } from '../token-encoding'

/** How much more than o200k a non-OpenAI tokenizer may count: Claude, Gemini and Llama run ~5–20 % over on English. */
export const OTHER_FAMILY_FACTOR = 1.2

/** What a request's parts cost beyond their text: per message (role and separators), per image or file. */
export const TOKENS_PER_MESSAGE = 4
export const TOKENS_PER_ATTACHMENT = 1_024

export { PIECE_CHARACTERS, piecesOf } from '../token-encoding'

export interface TokenCounter {
  /** Tokens in `text` for this family. */
  count(text: string): number
  /** `text` with its middle cut out so that about `keep` tokens remain, the cut marked. */
  truncateMiddle(text: string, keep: number): string
}

/** A counter for a family: exact for OpenAI's (`isOpenAiFamily`), estimated for the others. */
export const loadTokenCounter = async (isOpenAiFamily: boolean): Promise<TokenCounter> => {
  const encoding = await loadEncoding()
  const factor = isOpenAiFamily ? 1 : OTHER_FAMILY_FACTOR
  return {
    count: (text) => Math.ceil(countTokens(encoding, text) * factor),
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
