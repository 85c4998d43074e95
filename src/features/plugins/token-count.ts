/**
 * Prompt tokens as context compression counts them (docs/decisions.md, "Plugins"): OpenAI's `o200k_base`
 * encoding (gpt-tokenizer, loaded only when a request needs it), exact for OpenAI's current models; for other
 * families the same count times `OTHER_FAMILY_FACTOR`, since their tokenizers are not public and they split
 * English into somewhat more tokens than o200k does. A count over the truth only compresses a little early.
 */

import { AS_TEXT, countTokens, loadEncoding, PIECE_CHARACTERS, piecesOf } from '../../engine/token-encoding'

/** How much more than o200k a non-OpenAI tokenizer may count: Claude, Gemini and Llama run ~5–20 % over on English. */
export const OTHER_FAMILY_FACTOR = 1.2

/** What a request's parts cost beyond their text: per message (role and separators), per image or file. */
export const TOKENS_PER_MESSAGE = 4
export const TOKENS_PER_ATTACHMENT = 1_024

export { PIECE_CHARACTERS, piecesOf } from '../../engine/token-encoding'

export interface TokenCounter {
  /** Tokens in `text` for this family. */
  count(text: string): number
  /** `text` with its middle cut out so that about `keep` tokens remain, the cut marked. */
  truncateMiddle(text: string, keep: number): string
}

/**
 * Characters the encoder reads of one text: a longer one is counted from its head and tail and scaled to its length,
 * and cut from its ends alone, so the work is bounded whatever a prompt carries (docs/decisions.md, "No tenant can
 * stall the gateway"); encoding 20 MiB would hold the event loop about a second.
 */
export const COUNTED_CHARACTERS = 256 * 1024

/** Characters a token spans at most in ordinary text, to size the window a tail of tokens is read from. */
const MAX_CHARACTERS_PER_TOKEN = 16

/** A counter for a family: exact for OpenAI's (`isOpenAiFamily`), estimated for the others. */
export const loadTokenCounter = async (isOpenAiFamily: boolean): Promise<TokenCounter> => {
  const encoding = await loadEncoding()
  const factor = isOpenAiFamily ? 1 : OTHER_FAMILY_FACTOR
  const encode = (text: string) => piecesOf(text).flatMap((piece) => encoding.encode(piece, AS_TEXT))
  /** o200k tokens in `text`: exact up to `COUNTED_CHARACTERS`, beyond it its head and tail scaled to its length. */
  const o200k = (text: string): number => {
    if (text.length <= COUNTED_CHARACTERS) return countTokens(encoding, text)
    const half = COUNTED_CHARACTERS / 2
    const sampled = countTokens(encoding, text.slice(0, half)) + countTokens(encoding, text.slice(-half))
    return Math.ceil((sampled * text.length) / COUNTED_CHARACTERS)
  }
  /** The first `count` tokens of `text`, encoded piece by piece until there are enough. */
  const headTokens = (text: string, count: number): number[] => {
    const tokens: number[] = []
    for (let start = 0; start < text.length && tokens.length < count; ) {
      const [piece] = piecesOf(text.slice(start, start + 2 * PIECE_CHARACTERS))
      tokens.push(...encoding.encode(piece!, AS_TEXT))
      start += piece!.length
    }
    return tokens.slice(0, count)
  }
  return {
    count: (text) => Math.ceil(o200k(text) * factor),
    truncateMiddle(text, keep) {
      const kept = Math.max(0, Math.floor(keep / factor))
      const head = Math.ceil(kept / 2)
      const tail = kept - head
      if (text.length <= COUNTED_CHARACTERS) {
        const tokens = encode(text)
        if (kept >= tokens.length) return text
        return `${encoding.decode(tokens.slice(0, head))}\n[… ${tokens.length - kept} tokens removed to fit the context window …]\n${tail > 0 ? encoding.decode(tokens.slice(-tail)) : ''}`
      }
      const total = o200k(text)
      if (kept >= total) return text
      const tailWindow = tail > 0 ? encode(text.slice(-Math.min(text.length, tail * MAX_CHARACTERS_PER_TOKEN + PIECE_CHARACTERS))).slice(-tail) : []
      return `${encoding.decode(headTokens(text, head))}\n[… about ${total - kept} tokens removed to fit the context window …]\n${tailWindow.length > 0 ? encoding.decode(tailWindow) : ''}`
    },
  }
}
