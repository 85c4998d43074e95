/**
 * Bounds how long a reader waits for the next chunk of a body. Waits are timed with the clock and one timer per
 * exchange, armed at the first wait and re-armed only when it fires before the silence is long enough, so a
 * stream of many chunks does not set and clear a timer per chunk. `stop` must be called when the exchange ends.
 */
export class IdleWatch {
  #since = -1
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor(
    private readonly idleMs: number,
    private readonly onIdle: () => void,
  ) {}

  /** A reader starts waiting for the next chunk. */
  waiting(): void {
    this.#since = performance.now()
    if (this.#timer === undefined) this.#timer = setTimeout(this.#check, this.idleMs)
  }

  /** The chunk (or the end, or an error) came. */
  arrived(): void {
    this.#since = -1
  }

  stop(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#since = -1
  }

  readonly #check = (): void => {
    this.#timer = undefined
    // Nobody waits now: the next wait arms the timer again.
    if (this.#since < 0) return
    const waited = performance.now() - this.#since
    if (waited < this.idleMs) {
      this.#timer = setTimeout(this.#check, this.idleMs - waited)
      return
    }
    this.#since = -1
    this.onIdle()
  }
}
