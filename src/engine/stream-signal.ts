/**
 * The signal a stream's upstream exchanges listen to: it fires when the client goes away, and also when
 * the gateway ends the stream itself (shutdown), so both abort the upstream the same way. A plain object
 * rather than an `AbortController`, for the per-request cost client-signal.ts describes.
 */

import type { ClientSignal } from '../core/client-signal'

export class StreamSignal implements ClientSignal {
  #isAborted = false
  #reason: unknown
  #listeners: Array<() => void> = []

  constructor(client: ClientSignal) {
    if (client.aborted) this.abort(client.reason)
    else client.addEventListener('abort', () => this.abort(client.reason), { once: true })
  }

  get aborted(): boolean {
    return this.#isAborted
  }

  get reason(): unknown {
    return this.#reason
  }

  abort(reason?: unknown): void {
    if (this.#isAborted) return
    this.#isAborted = true
    this.#reason = reason
    for (const listener of this.#listeners.splice(0)) listener()
  }

  // As with an AbortSignal, a listener added after the abort is never called.
  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.#isAborted) this.#listeners.push(listener)
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.#listeners.indexOf(listener)
    if (index >= 0) this.#listeners.splice(index, 1)
  }
}
