/**
 * `response-healing` (docs/decisions.md, "Plugins"): a whole answer asked for JSON (`text.format` json_object or
 * json_schema; Chat Completions `response_format`) has its text healed into JSON (json-healing.ts) and, for a
 * json_schema, checked against the schema, compiled once per request. A streamed answer is sent as the model
 * writes it: the stage says it was skipped. A request that asks for no JSON is refused, since nothing could be healed.
 */

import { RE2JS } from 're2js'
import { InvalidRequestError } from '../../core/errors'
import { isNestedDeeperThan } from '../../core/json-depth'
import type { OutputItem, OutputText } from '../../providers/types'
import type { ResponseResult } from '../../engine/session-events'
import { recordStage, type PluginDefinition, type PluginRequest, type RequestPlugin } from './contract'
import { healJson, type JsonRepair } from './json-healing'
import type { ResponseHealingPluginSettings } from './response-healing.schema'

const ID = 'response-healing'

/** A schema larger than this is not compiled: validating model output must stay cheap. */
export const HEALING_SCHEMA_MAX_CHARACTERS = 64 * 1024
export const HEALING_SCHEMA_MAX_DEPTH = 32
/** Schema errors the stage lists at most. */
const MAX_REPORTED_ERRORS = 5

type Validate = ((value: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string }> | null }

/**
 * The caller's `pattern` and `patternProperties` run on re2js, linear in the text: with JavaScript's backtracking
 * engine a pattern such as `(a+)+$` would hold the event loop for minutes on the model's answer. A pattern RE2
 * cannot run (lookarounds, backreferences) makes the schema one response-healing cannot check (400).
 */
const re2Engine = Object.assign(
  (pattern: string) => {
    const regex = RE2JS.compile(pattern)
    return { test: (text: string) => regex.matcher(text).find() }
  },
  { code: 're2' },
)

/** Compiles a JSON schema with Ajv, loaded only when a request needs it. */
const compileSchema = async (schema: Record<string, unknown>): Promise<Validate> => {
  const { default: Ajv } = await import('ajv')
  // Not strict: providers' JSON schemas carry keywords Ajv does not know (OpenAI's `strict` extensions and the like).
  const ajv = new (Ajv as unknown as new (options: Record<string, unknown>) => { compile(schema: unknown): Validate })({
    strict: false,
    allErrors: true,
    code: { regExp: re2Engine },
  })
  return ajv.compile(schema)
}

interface PartOutcome {
  healed: boolean
  repairs: JsonRepair[]
  schemaErrors?: string[]
  error?: string
}

const healPart = (part: OutputText, validate: Validate | undefined): { part: OutputText; outcome: PartOutcome } => {
  const healed = healJson(part.text)
  if (!healed.isHealed) return { part, outcome: { healed: false, repairs: [], error: healed.reason } }
  const schemaErrors = validate && !validate(healed.value) ? (validate.errors ?? []).slice(0, MAX_REPORTED_ERRORS).map((error) => `${error.instancePath || '/'} ${error.message ?? 'is invalid'}`) : undefined
  const outcome: PartOutcome = { healed: healed.repairs.length > 0, repairs: healed.repairs, ...(schemaErrors ? { schemaErrors } : {}) }
  return { part: healed.repairs.length > 0 ? { ...part, text: healed.text } : part, outcome }
}

const summaryOf = (outcomes: PartOutcome[], repairs: JsonRepair[]): string => {
  const failed = outcomes.find((outcome) => outcome.error)
  if (failed) return `the answer could not be healed: ${failed.error}`
  const invalid = outcomes.some((outcome) => outcome.schemaErrors)
  const healed = repairs.length > 0 ? `healed (${repairs.join(', ')})` : 'already valid JSON'
  return invalid ? `${healed}, but it does not match the schema` : healed
}

export const responseHealing: PluginDefinition<ResponseHealingPluginSettings> = {
  id: ID,
  create(_settings, { body, where }): RequestPlugin {
    const format = body.text?.format
    if (format?.type !== 'json_object' && format?.type !== 'json_schema') {
      throw new InvalidRequestError(`${where}: response-healing needs a JSON answer: set text.format (response_format on /chat/completions) to json_object or json_schema`)
    }
    if (body.stream) {
      return {
        id: ID,
        async beforeAttempts(request) {
          recordStage(request, ID, 'skipped: a streamed answer is sent as the model writes it and cannot be healed', { healed: false, skipped: 'streaming' })
        },
      }
    }
    const schema = format.type === 'json_schema' ? (format.schema as Record<string, unknown>) : undefined
    if (schema && JSON.stringify(schema).length > HEALING_SCHEMA_MAX_CHARACTERS) {
      throw new InvalidRequestError(`${where}: response-healing checks schemas of at most ${HEALING_SCHEMA_MAX_CHARACTERS} characters; text.format.schema is larger`)
    }
    if (schema && isNestedDeeperThan(schema, HEALING_SCHEMA_MAX_DEPTH)) {
      throw new InvalidRequestError(`${where}: response-healing checks schemas nested at most ${HEALING_SCHEMA_MAX_DEPTH} levels; text.format.schema is deeper`)
    }
    let validate: Validate | undefined
    return {
      id: ID,
      async beforeAttempts() {
        if (!schema) return
        try {
          validate = await compileSchema(schema)
        } catch (error) {
          throw new InvalidRequestError(`body.text.format.schema: not a JSON Schema response-healing can check (${error instanceof Error ? error.message : String(error)})`)
        }
      },
      afterWhole(result: ResponseResult, request: PluginRequest): ResponseResult {
        const outcomes: PartOutcome[] = []
        const output = result.output.map((item): OutputItem => {
          if (item.type !== 'message' || !Array.isArray(item.content)) return item
          let isChanged = false
          const content = (item.content as Array<OutputText | { type: string }>).map((part) => {
            if (part.type !== 'output_text') return part
            const healed = healPart(part as OutputText, validate)
            outcomes.push(healed.outcome)
            isChanged ||= healed.part !== part
            return healed.part
          })
          return isChanged ? ({ ...item, content } as OutputItem) : item
        })
        const repairs = [...new Set(outcomes.flatMap((outcome) => outcome.repairs))]
        const schemaErrors = outcomes.flatMap((outcome) => outcome.schemaErrors ?? [])
        const error = outcomes.find((outcome) => outcome.error)?.error
        if (outcomes.length === 0) {
          recordStage(request, ID, 'nothing to heal: the answer has no text', { healed: false, repairs: [] })
          return result
        }
        recordStage(request, ID, summaryOf(outcomes, repairs), {
          healed: repairs.length > 0,
          repairs,
          ...(schema ? { schema_valid: schemaErrors.length === 0 && !error, ...(schemaErrors.length > 0 ? { schema_errors: schemaErrors } : {}) } : {}),
          ...(error ? { error } : {}),
        })
        return { ...result, output }
      },
    }
  },
}
