/**
 * A feature's own state on a request (or on anything the preparation hands around): a typed key the feature owns,
 * so the kernel's types name no feature. The value is a property under a symbol only the slot knows: a copy of the
 * request by spread (`{ ...request, body }`, a turn of the server-tool loop) carries it as it carries every other
 * field, and a value set on the copy stays the copy's, exactly as a named field would.
 */

export interface RequestSlot<T> {
  get(holder: object): T | undefined
  set(holder: object, value: T): void
}

export const requestSlot = <T>(name: string): RequestSlot<T> => {
  const key = Symbol(name)
  return {
    get: (holder) => (holder as Record<symbol, T | undefined>)[key],
    set: (holder, value) => {
      ;(holder as Record<symbol, T>)[key] = value
    },
  }
}
