/** The one place routes turn untrusted input into typed values. */

import * as v from 'valibot'
import { InvalidRequestError } from './errors'
import { MAX_JSON_DEPTH, isNestedDeeperThan } from './json-depth'
import { MODEL_SLUG_MAX, MODEL_SLUG_PATTERN } from './patterns'
import { describeRule } from './validation-messages'

export type InputSource = 'body' | 'query' | 'params' | 'options' | 'input'

type AnySchema = v.GenericSchema<unknown, unknown>

// Built once per source: valibot calls it only for rules that have no message of their own.
const RULE_MESSAGES: Record<InputSource, (issue: v.BaseIssue<unknown>) => string> = {
  body: (issue) => describeRule(issue, 'field'),
  query: (issue) => describeRule(issue, 'field'),
  params: (issue) => describeRule(issue, 'field'),
  input: (issue) => describeRule(issue, 'field'),
  // Gateway options and the runner's config file speak of settings.
  options: (issue) => describeRule(issue, 'setting'),
}

/**
 * A union none of whose options matched says only what it expected ("must be a string or an array of
 * content parts"). When one option got further into the value (an array of parts with one bad field),
 * its deepest problem is the one worth naming. An option's issues carry paths relative to the union.
 */
const mostSpecific = (issue: v.BaseIssue<unknown>): v.BaseIssue<unknown> => {
  if (issue.type !== 'union' || !issue.issues) return issue
  let deepest: v.BaseIssue<unknown> | undefined
  for (const inner of issue.issues) {
    const candidate = mostSpecific(inner)
    if ((candidate.path?.length ?? 0) > (deepest?.path?.length ?? 0)) deepest = candidate
  }
  if (!deepest) return issue
  return { ...deepest, path: [...(issue.path ?? []), ...deepest.path!] as typeof issue.path }
}

/** Shorter submitted strings are not looked for: they are no secret, and they occur in rules' own words. */
const ECHO_MIN_LENGTH = 6

/**
 * The issue's message, unless it repeats the submitted string (a schema's own message built from the input): then
 * the rule's message, which is built from the schema alone (validation-messages.ts) and so can only contain the
 * value where the schema itself lists it as allowed.
 */
const withoutValue = (issue: v.BaseIssue<unknown>, source: InputSource): string => {
  const input = issue.input
  if (typeof input !== 'string' || input.length < ECHO_MIN_LENGTH || !issue.message.includes(input)) return issue.message
  return RULE_MESSAGES[source](issue)
}

/**
 * Validates `value` against `schema`, or throws a 400 naming the first problem's path and the rule
 * it broke, e.g. `body.allowed_models: must have at most 100 items`. The message never quotes the
 * submitted value: it may be a key or other secret sent in the wrong field.
 */
export const parseInput = <S extends AnySchema>(schema: S, value: unknown, source: InputSource): v.InferOutput<S> => {
  const result = v.safeParse(schema, value, { abortPipeEarly: true, message: RULE_MESSAGES[source] })
  if (result.success) return result.output
  const issue = mostSpecific(result.issues[0])
  const path = v.getDotPath(issue)
  const where = path ? `${source}.${path}` : source
  // A missing required field reads better as "is required" than as a type mismatch with undefined.
  const message = issue.kind === 'schema' && issue.input === undefined ? 'is required' : withoutValue(issue, source)
  throw new InvalidRequestError(`${where}: ${message}`)
}

/**
 * Free-form JSON (tool parameters, JSON schemas, pass-through fields) nested at most
 * `MAX_JSON_DEPTH` levels, checked without recursion.
 */
export const boundedJson = <S extends AnySchema>(schema: S) =>
  v.pipe(
    schema,
    v.check((value: unknown) => !isNestedDeeperThan(value, MAX_JSON_DEPTH), `must not nest deeper than ${MAX_JSON_DEPTH} levels`),
  )

/** Any JSON value, nested at most `MAX_JSON_DEPTH` levels. */
export const BoundedJsonSchema = boundedJson(v.unknown())

/**
 * An object whose declared fields are checked and whose other fields pass through (for upstreams
 * that know them), each of those nested at most `MAX_JSON_DEPTH` levels.
 */
export const passThroughObject = <const E extends v.ObjectEntries>(entries: E) => v.objectWithRest(entries, BoundedJsonSchema)

/** A whole number from `minimum` to `maximum`, with the messages every body field uses. */
/** A model slug `<author>/<name>` as every body and option names one (`MODEL_SLUG_PATTERN`, at most `MODEL_SLUG_MAX`). */
export const ModelSlugSchema = v.pipe(
  v.string(),
  v.maxLength(MODEL_SLUG_MAX, `must be at most ${MODEL_SLUG_MAX} characters`),
  v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>'),
)

export const integer = (minimum: number, maximum = Number.MAX_SAFE_INTEGER) =>
  v.pipe(v.number(), v.integer('must be an integer'), v.minValue(minimum, `must be at least ${minimum}`), v.maxValue(maximum, `must be at most ${maximum}`))

/** A whole number query parameter from `minimum` to `maximum`, given as a decimal string. */
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

/**
 * The query of a route that declares none: every parameter is an unknown field, refused by name as a body's
 * would be, so a filter or option the route does not read never looks applied.
 */
export const NoQuerySchema = v.strictObject({})

/**
 * The body of a route that reads none (GET, DELETE, actions without options): a field in it is refused by name, as
 * an unknown query parameter is. `{}` and `null` say nothing and pass, as clients send them on such calls.
 */
export const NoBodySchema = v.nullable(v.strictObject({}))

/** Turns URL search params into a plain object; a repeated parameter keeps its last value. */
export const searchParamsToObject = (searchParams: URLSearchParams): Record<string, string> => {
  const query: Record<string, string> = {}
  for (const [name, value] of searchParams) query[name] = value
  return query
}

type LooseObjectSchema<E extends v.ObjectEntries, M extends v.ErrorMessage<v.LooseObjectIssue> | undefined> = v.LooseObjectSchema<E, M>
type Dataset = { typed?: boolean; value: unknown; issues?: v.BaseIssue<unknown>[] }
type EntrySchema = v.ObjectEntries[string] & { default?: unknown; fallback?: unknown }

const isOptionalType = (schema: EntrySchema) => schema.type === 'exact_optional' || schema.type === 'optional' || schema.type === 'nullish'

/**
 * Refuses a field of an object body that `entries` does not declare, as `body.<name>: unknown field`: for the
 * sparse loose bodies (below), whose check looks only at the fields a request sends. Runs after them, on their output.
 */
export const unknownFieldsRefused = <T extends object>(entries: v.ObjectEntries) => {
  const known = new Set(Object.keys(entries))
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    const body = dataset.value as Record<string, unknown>
    for (const key in body) {
      if (known.has(key)) continue
      addIssue({ message: 'unknown field', path: [{ type: 'object', origin: 'value', input: body, key, value: body[key] }] })
      return
    }
  })
}

/**
 * `v.looseObject` for request bodies with many optional fields, of which a request sends a few. valibot's own
 * check asks the value for every field the schema names (45 for a Responses request); this one looks at the
 * fields the value has and at those it must see anyway (required, defaulted, with a fallback), in the schema's
 * order. The output, its key order and the issues are the same: it runs valibot's code for every field, and
 * hands values that are not plain objects to valibot's own check.
 */
export const sparseLooseObject = <const E extends v.ObjectEntries, const M extends v.ErrorMessage<v.LooseObjectIssue> | undefined = undefined>(
  entries: E,
  message?: M,
): LooseObjectSchema<E, M> => {
  const schema = v.looseObject(entries, message) as LooseObjectSchema<E, M>
  const keys = Object.keys(entries)
  // A field named like something every object inherits (`toString`) would be "in" any value: not sparse then.
  if (keys.some((key) => key in Object.prototype)) return schema
  const fieldSchemas = keys.map((key) => entries[key] as EntrySchema)
  const indexOf = new Map(keys.map((key, index) => [key, index]))
  const alwaysSeen = keys
    .map((_, index) => index)
    .filter((index) => {
      const field = fieldSchemas[index]!
      return !isOptionalType(field) || field.default !== undefined || field.fallback !== undefined
    })
  const denseRun = schema['~run'].bind(schema)
  const run = function (this: typeof schema, dataset: Dataset, config: v.Config<v.BaseIssue<unknown>>): Dataset {
    const input = dataset.value
    const prototype = input && typeof input === 'object' ? (Object.getPrototypeOf(input) as unknown) : undefined
    if (prototype !== Object.prototype && prototype !== null) return denseRun(dataset as never, config as never) as Dataset
    const record = input as Record<string, unknown>
    // The schema's fields the value has, and those always seen, merged in the schema's order.
    const seen = alwaysSeen.slice()
    for (const key in record) {
      const index = indexOf.get(key)
      if (index === undefined) continue
      let at = seen.length
      while (at > 0 && seen[at - 1]! > index) at--
      if (seen[at - 1] !== index) seen.splice(at, 0, index)
    }
    dataset.typed = true
    const output: Record<string, unknown> = {}
    dataset.value = output
    for (const index of seen) {
      const key = keys[index]!
      const valueSchema = fieldSchemas[index]!
      const isPresent = key in record
      if (isPresent || (isOptionalType(valueSchema) && valueSchema.default !== undefined)) {
        const value = isPresent ? record[key] : v.getDefault(valueSchema as never)
        const valueDataset = valueSchema['~run']({ value }, config) as Dataset
        if (valueDataset.issues) {
          const pathItem = { type: 'object', origin: 'value', input: record, key, value }
          for (const issue of valueDataset.issues) {
            if (issue.path) (issue.path as unknown[]).unshift(pathItem)
            else (issue as { path?: unknown[] }).path = [pathItem]
            dataset.issues?.push(issue)
          }
          if (!dataset.issues) dataset.issues = valueDataset.issues
          if (config.abortEarly) {
            dataset.typed = false
            break
          }
        }
        if (!valueDataset.typed) dataset.typed = false
        output[key] = valueDataset.value
      } else if (valueSchema.fallback !== undefined) output[key] = v.getFallback(valueSchema as never)
      else if (!isOptionalType(valueSchema)) {
        v._addIssue(this as never, 'key', dataset as never, config as never, {
          input: undefined,
          expected: `"${key}"`,
          path: [{ type: 'object', origin: 'key', input: record as never, key, value: record[key] }],
        })
        if (config.abortEarly) break
      }
    }
    if (!dataset.issues || !config.abortEarly) {
      for (const key in record) if (v._isValidObjectKey(record, key) && !indexOf.has(key)) output[key] = record[key]
    }
    return dataset
  }
  ;(schema as { '~run': unknown })['~run'] = run
  return schema
}
