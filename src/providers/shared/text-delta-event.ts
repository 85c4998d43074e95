/**
 * The text delta an adapter builds itself (from a Chat Completions chunk, an Anthropic or Gemini event). It is
 * most of a stream's events, so its Responses wire text is written from its fields directly, which costs about
 * half of serialising the object; the text is made when read, so it always matches the fields.
 */

export class TextDeltaEvent {
  readonly type: 'response.output_text.delta'
  item_id: string
  output_index: number
  content_index: number
  delta: string
  logprobs: unknown[]

  constructor(itemId: string, outputIndex: number, contentIndex: number, delta: string) {
    // Declared and assigned in the order of the plain object the builder made before, so serialising either
    // gives the same text.
    this.type = 'response.output_text.delta'
    this.item_id = itemId
    this.output_index = outputIndex
    this.content_index = contentIndex
    this.delta = delta
    this.logprobs = []
  }

  /** The event's JSON, as `JSON.stringify` would write it (a getter: never serialised, never copied by a spread). */
  get wireJson(): string {
    return `${this.wireJsonOpen}}`
  }

  /** `wireJson` without its closing brace: the Responses writer appends its own `sequence_number` to it. */
  get wireJsonOpen(): string {
    const logprobs = this.logprobs.length === 0 ? '[]' : JSON.stringify(this.logprobs)
    return `{"type":"${this.type}","item_id":${JSON.stringify(this.item_id)},"output_index":${this.output_index},"content_index":${this.content_index},"delta":${JSON.stringify(this.delta)},"logprobs":${logprobs}`
  }
}
