/** A promise the test opens by hand, to hold a scripted answer at a chosen step without sleeping. */

export interface Gate extends PromiseLike<void> {
  /** Lets everything waiting on the gate go on. */
  open(): void
  /** Resolves once something waits on the gate: the scripted answer has reached it. */
  readonly reached: Promise<void>
  readonly isOpen: boolean
}

/**
 * Creates a closed gate. Put it in a script as `{ type: 'wait', until: gate }`, wait for `gate.reached`
 * to know the answer got there, then `gate.open()` to let it go on.
 * @example
 * const thinking = gate()
 * const model = scriptedProvider({ reply: [{ type: 'text', text: 'Hel' }, { type: 'wait', until: thinking }, { type: 'text', text: 'lo' }] })
 * // … start a streamed request, then:
 * await thinking.reached
 * thinking.open()
 */
export const gate = (): Gate => {
  let open!: () => void
  let arrive!: () => void
  let isOpen = false
  const opened = new Promise<void>((resolve) => (open = resolve))
  const reached = new Promise<void>((resolve) => (arrive = resolve))
  return {
    open() {
      isOpen = true
      open()
    },
    reached,
    get isOpen() {
      return isOpen
    },
    // Awaiting a thenable calls `then`: that call is the moment the script reached the gate.
    then(onOpened, onRejected) {
      arrive()
      return opened.then(onOpened, onRejected)
    },
  }
}
