/**
 * A deep copy of plain data (objects, arrays, strings, numbers…), the same as `structuredClone` gives for it.
 * `structuredClone` goes through V8's serializer: for a small output item that is about 6 µs, against under
 * 1 µs for copying the properties (measured on Node 20), and a translated stream copies three items per message.
 * Anything that is not a plain object or array (a Date, a Map, a class instance) is still handed to it.
 */
export const cloneData = <T>(value: T): T => {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array(value.length)
    // `in`: a hole stays a hole, as structuredClone keeps it.
    for (let index = 0; index < value.length; index++) if (index in value) copy[index] = cloneData(value[index] as unknown)
    return copy as T
  }
  const prototype = Object.getPrototypeOf(value) as unknown
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value)
  const copy: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const field = cloneData((value as Record<string, unknown>)[key])
    // An own `__proto__` (from parsed JSON) stays an own property; assigning it would set the prototype.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: field, enumerable: true, writable: true, configurable: true })
    else copy[key] = field
  }
  return copy as T
}
