/** The one place routes turn untrusted input into typed values. */

import * as v from 'valibot'
import { InvalidRequestError } from './errors'

export type InputSource = 'body' | 'query' | 'params' | 'options' | 'input'

type AnySchema = v.GenericSchema<unknown, unknown>

const describeIssue = (issue: v.BaseIssue<unknown>): string => {
  // A missing required field reads better as "is required" than as a type mismatch with undefined.
  if (issue.kind === 'schema' && issue.received === 'undefined') return 'is required'
  return issue.message
}

/**
 * Validates `value` against `schema`, or throws a 400 naming the first problem's path,
 * e.g. `body.allowed_models: at most 100 items`.
 */
export const parseInput = <S extends AnySchema>(schema: S, value: unknown, source: InputSource): v.InferOutput<S> => {
  const result = v.safeParse(schema, value, { abortPipeEarly: true })
  if (result.success) return result.output
  const issue = result.issues[0]
  const path = v.getDotPath(issue)
  const where = path ? `${source}.${path}` : source
  throw new InvalidRequestError(`${where}: ${describeIssue(issue)}`)
}

/** A non-negative integer query parameter, given as a decimal string. */
export const integerQuery = (minimum: number, maximum: number) =>
  v.pipe(
    v.string(),
    v.regex(/^\d+$/, 'must be a whole number'),
    v.transform(Number),
    v.minValue(minimum, `must be at least ${minimum}`),
    v.maxValue(maximum, `must be at most ${maximum}`),
  )

/** A boolean query parameter: `true` or `false`. */
export const booleanQuery = () =>
  v.pipe(
    v.picklist(['true', 'false'], 'must be true or false'),
    v.transform((value) => value === 'true'),
  )

/** Turns URL search params into a plain object; a repeated parameter keeps its last value. */
export const searchParamsToObject = (searchParams: URLSearchParams): Record<string, string> => {
  const query: Record<string, string> = {}
  for (const [name, value] of searchParams) query[name] = value
  return query
}
