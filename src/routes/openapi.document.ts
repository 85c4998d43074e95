/**
 * The gateway's own API as an OpenAPI 3.1 document, built from the route table: every route's method, path and
 * authentication, and its path parameters, query and body as their valibot schemas convert to JSON Schema
 * (`@valibot/to-json-schema`, draft 2020-12, the dialect of OpenAPI 3.1). Rules JSON Schema cannot say (`v.check`,
 * transforms) are left out, so the document describes the inputs and the gateway's validation stays the authority.
 * Errors are described by the error body each route answers with (standard, Anthropic's on `/messages`, the intern
 * body under `/interns`); success bodies have no schema yet, only a description.
 */

import * as v from 'valibot'
import { toJsonSchema, type ConversionConfig, type JsonSchema } from '@valibot/to-json-schema'
import type { ErrorFlavor } from '../core/errors'
import { errorFlavorForPath } from '../pipeline/error-flavor'
import type { AnyRoute } from '../pipeline/route'

type Json = Record<string, unknown>

// Input types: what a client sends, before any transform; rules with no JSON Schema form are skipped, not fatal.
const CONVERSION: ConversionConfig = { target: 'draft-2020-12', typeMode: 'input', errorMode: 'ignore' }

// The error bodies (src/core/errors.ts, toRenderedError), written as schemas so the document is generated like the rest.
const StandardErrorBodySchema = v.object({
  error: v.strictObject({
    code: v.pipe(v.number(), v.integer()),
    message: v.string(),
    metadata: v.optional(v.record(v.string(), v.unknown())),
  }),
})
const InternErrorBodySchema = v.strictObject({
  error: v.strictObject({
    code: v.pipe(v.number(), v.integer()),
    message: v.string(),
    // Absent on 401 and 403.
    metadata: v.optional(v.strictObject({ reason: v.string(), retryable: v.boolean() })),
  }),
})
const AnthropicErrorBodySchema = v.strictObject({
  type: v.literal('error'),
  error: v.strictObject({ type: v.string(), message: v.string() }),
})

const ERROR_BODIES: Record<ErrorFlavor, { name: string; schema: v.GenericSchema }> = {
  standard: { name: 'ErrorBody', schema: StandardErrorBodySchema },
  intern: { name: 'InternErrorBody', schema: InternErrorBodySchema },
  anthropic: { name: 'AnthropicErrorBody', schema: AnthropicErrorBodySchema },
}

const AUTH_DESCRIPTIONS: Record<AnyRoute['auth'], string> = {
  none: 'No key needed.',
  any: 'Any API key (management or regular).',
  management: 'A management key.',
  inference: 'A regular API key (management keys cannot run models).',
}

/** `/keys/:hash` as OpenAPI writes it: `/keys/{hash}`. */
export const openApiPath = (path: string): string => {
  const trimmed = path.replace(/\/+$/, '')
  return trimmed === '' ? '/' : trimmed.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

const operationIdOf = (route: AnyRoute): string =>
  `${route.method.toLowerCase()}${route.path.replace(/:([A-Za-z0-9_]+)/g, 'by-$1').replace(/[^A-Za-z0-9]+/g, '_')}`.replace(/_+$/, '')

/** The first literal segment names the group a route belongs to (`keys`, `models`, …); the index is `meta`. */
const tagOf = (route: AnyRoute): string => route.path.split('/').find((segment) => segment !== '' && !segment.startsWith(':')) ?? 'meta'

/**
 * Converts a schema and moves the definitions it needs (recursive schemas: `#/$defs/…`) into the document's
 * components under names of their own, since a `$ref` resolves against the whole document.
 */
const convert = (schema: v.GenericSchema, owner: string, components: Record<string, JsonSchema>): Json => {
  const { $schema: _dialect, $defs: definitions, ...converted } = toJsonSchema(schema, CONVERSION) as Json & { $defs?: Record<string, JsonSchema> }
  if (!definitions) return converted
  const nameOf = (key: string) => `${owner}.${key}`
  const relink = <T>(schema: T): T =>
    JSON.parse(JSON.stringify(schema).replace(/"\$ref":"#\/\$defs\/([^"]+)"/g, (_match, key: string) => `"$ref":"#/components/schemas/${nameOf(key)}"`)) as T
  for (const [key, definition] of Object.entries(definitions)) components[nameOf(key)] = relink(definition)
  return relink(converted)
}

/** The entries of an object schema as parameters (`in: path` or `in: query`). */
const parametersOf = (schema: Json, location: 'path' | 'query'): Json[] => {
  const properties = (schema.properties ?? {}) as Record<string, Json>
  const required = new Set((schema.required ?? []) as string[])
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: location,
    required: location === 'path' || required.has(name),
    schema: property,
  }))
}

const errorResponse = (description: string, flavor: ErrorFlavor) => ({
  description,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${ERROR_BODIES[flavor].name}` } } },
})

const operationOf = (route: AnyRoute, components: Record<string, JsonSchema>): Json => {
  const operationId = operationIdOf(route)
  const flavor = route.errorFlavor ?? errorFlavorForPath(route.path)
  const parameters = [
    ...(route.params ? parametersOf(convert(route.params, `${operationId}.params`, components), 'path') : []),
    ...(route.query ? parametersOf(convert(route.query, `${operationId}.query`, components), 'query') : []),
  ]
  const body = route.body ? convert(route.body, `${operationId}.body`, components) : undefined
  // A body with `stream` may be answered as server-sent events.
  const canStream = body !== undefined && Object.hasOwn((body.properties ?? {}) as Json, 'stream')
  const security =
    route.auth === 'none' ? [] : route.keyHeaders === 'bearer-or-x-api-key' ? [{ bearer: [] }, { apiKeyHeader: [] }] : [{ bearer: [] }]
  return {
    operationId,
    tags: [tagOf(route)],
    description: AUTH_DESCRIPTIONS[route.auth],
    security,
    ...(parameters.length > 0 ? { parameters } : {}),
    // An empty body reads as `{}`, so the schema's own required fields say what must be sent.
    ...(body ? { requestBody: { content: { 'application/json': { schema: body } } } } : {}),
    responses: {
      '2XX': {
        description: canStream ? 'The answer: JSON, or server-sent events when the body asks for a stream.' : 'The answer, as JSON.',
        content: { 'application/json': {}, ...(canStream ? { 'text/event-stream': {} } : {}) },
      },
      '4XX': errorResponse('The request was refused; the message says why (a 400 names the field).', flavor),
      '5XX': errorResponse('The gateway, its store or the upstream failed.', flavor),
    },
  }
}

export interface OpenApiDocumentOptions {
  /** The API's base URL or path, as `servers[0].url` (`/api/v1` by default). */
  serverUrl: string
  /** The package's version. */
  version: string
}

/** The OpenAPI 3.1 document of `routes`, one operation per route. */
export const buildOpenApiDocument = (routes: readonly AnyRoute[], options: OpenApiDocumentOptions): Json => {
  const components: Record<string, JsonSchema> = {}
  for (const { name, schema } of Object.values(ERROR_BODIES)) components[name] = convert(schema, name, components)
  const paths: Record<string, Record<string, Json>> = {}
  for (const route of routes) {
    const path = openApiPath(route.path)
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operationOf(route, components) }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'modelgate',
      version: options.version,
      description:
        "An OpenRouter-style LLM gateway's HTTP API: model requests in the OpenAI Responses, Chat Completions and Anthropic " +
        'Messages formats, the model catalog, keys, workspaces, usage and the operator routes.',
    },
    servers: [{ url: options.serverUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer mg-v1-…`.' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key', description: "Anthropic's clients send their key as `x-api-key`." },
      },
    },
  }
}
