/**
 * Freezes a value and everything it holds, children before their parent, so a frozen root is frozen all through and
 * a check for it can stop at the root. Stores that hand the same record to several readers freeze it once instead of
 * copying it on every read.
 */
export const deepFreeze = <T>(value: T): T => {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}
