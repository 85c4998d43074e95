import { readFileSync } from 'node:fs'
import { Validator } from '@seriousme/openapi-schema-validator'
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { version } from '../../../package.json'
import { createGateway } from '../../../src/gateway/gateway'
import { defineRoute, json } from '../../../src/pipeline/route'
import { routes } from '../../../src/routes'
import { buildOpenApiDocument, openApiPath } from '../../../src/routes/openapi.document'
import { OPENAPI_FILE, openApiFileText } from '../../../scripts/openapi-document'
import { createTestGateway, readJson } from '../../helpers/gateway'

type Document = {
  openapi: string
  info: { version: string }
  servers: Array<{ url: string }>
  paths: Record<string, Record<string, { security: unknown[]; parameters?: Array<{ name: string; in: string; required: boolean }>; requestBody?: unknown; responses: Record<string, { content?: Record<string, { schema?: { $ref: string } }> }> }>>
  components: { schemas: Record<string, unknown> }
}

const document = () => buildOpenApiDocument(routes, { serverUrl: '/api/v1', version }) as Document

const validate = async (candidate: unknown) => {
  const validator = new Validator()
  const result = await validator.validate(candidate as Record<string, unknown>)
  return { ...result, version: validator.version }
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await validate(document())

    expect(result.errors).toBeUndefined()
    expect(result.valid).toBe(true)
    expect(result.version).toBe('3.1')
    // The validator does refuse a broken one.
    expect((await validate({ ...document(), paths: { '/x': { get: { responses: 'none' } } } })).valid).toBe(false)
  })

  it('has one operation per route of the route table, itself and the index included', () => {
    const { paths } = document()
    const operations = Object.values(paths).flatMap((methods) => Object.keys(methods))

    expect(operations).toHaveLength(routes.length)
    for (const route of routes) expect(paths[openApiPath(route.path)]?.[route.method.toLowerCase()], `${route.method} ${route.path}`).toBeDefined()
    expect(paths['/openapi.json']?.get).toBeDefined()
    expect(paths['/']?.get).toBeDefined()
  })

  it('describes a route added to the table, with its path parameters, query and body', async () => {
    const added = defineRoute({
      method: 'POST',
      path: '/widgets/:id',
      auth: 'management',
      params: v.strictObject({ id: v.string() }),
      query: v.strictObject({ dry_run: v.optional(v.picklist(['true', 'false'])) }),
      body: v.strictObject({ name: v.pipe(v.string(), v.maxLength(10)), stream: v.optional(v.boolean()) }),
      handle: async () => json({}),
    })

    const { paths } = buildOpenApiDocument([...routes, added], { serverUrl: '/api/v1', version }) as Document
    const operation = paths['/widgets/{id}']!.post!

    expect(operation.parameters).toEqual([
      { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
      { name: 'dry_run', in: 'query', required: false, schema: { type: 'string', enum: ['true', 'false'] } },
    ])
    expect(operation.requestBody).toEqual({
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: { name: { type: 'string', maxLength: 10 }, stream: { type: 'boolean' } },
            required: ['name'],
            additionalProperties: false,
          },
        },
      },
    })
    expect(Object.keys(operation.responses['2XX']!.content!)).toEqual(['application/json', 'text/event-stream'])
    expect(operation.security).toEqual([{ bearer: [] }])
  })

  it('gives each route the error body it answers with, and no key to the routes that need none', () => {
    const { paths, components } = document()
    const errorBodyOf = (path: string, method: string) => paths[path]![method]!.responses['4XX']!.content!['application/json']!.schema!.$ref

    expect(errorBodyOf('/keys', 'get')).toBe('#/components/schemas/ErrorBody')
    expect(errorBodyOf('/messages', 'post')).toBe('#/components/schemas/AnthropicErrorBody')
    expect(errorBodyOf('/interns/{internId}/chat', 'post')).toBe('#/components/schemas/InternErrorBody')
    expect(Object.keys(components.schemas)).toEqual(expect.arrayContaining(['ErrorBody', 'AnthropicErrorBody', 'InternErrorBody']))
    expect(paths['/messages']!.post!.security).toEqual([{ bearer: [] }, { apiKeyHeader: [] }])
    expect(paths['/health']!.get!.security).toEqual([])
    expect(paths['/openapi.json']!.get!.security).toEqual([])
  })

  it('keeps every $ref pointing at a schema of the document', () => {
    const text = JSON.stringify(document())
    const targets = [...text.matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]!)

    expect(targets.length).toBeGreaterThan(0)
    const { components } = document()
    for (const target of new Set(targets)) {
      expect(target).toMatch(/^#\/components\/schemas\//)
      expect(components.schemas[target.slice('#/components/schemas/'.length)], target).toBeDefined()
    }
  })

  it(`is committed as ${OPENAPI_FILE}, up to date (run npm run openapi:generate)`, () => {
    const committed = JSON.parse(readFileSync(new URL(`../../../${OPENAPI_FILE}`, import.meta.url), 'utf8')) as Document
    const fresh = JSON.parse(openApiFileText()) as Document
    // The release bumps package.json's version; the document's own version follows at the next generation.
    expect({ ...committed, info: { ...committed.info, version: 'any' } }).toEqual({ ...fresh, info: { ...fresh.info, version: 'any' } })
  })
})

describe('GET /openapi.json', () => {
  it('serves the document without a key, for the base path it is mounted under', async () => {
    const t = await createTestGateway()
    const response = await t.call('GET', '/openapi.json', { key: null })

    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await readJson(response)).toEqual(document())

    const elsewhere = createGateway({ logger: false, basePath: '/gateway' })
    const served = (await (await elsewhere.fetch(new Request('http://gateway.test/gateway/openapi.json'))).json()) as Document
    expect(served.servers).toEqual([{ url: '/gateway' }])
    expect((await validate(served)).valid).toBe(true)
    await elsewhere.close()
  })
})

describe('GET / (the API index)', () => {
  it.each(['', '/'])('answers under the base path%s without a key: name, version and links', async (suffix) => {
    const gateway = createGateway({ logger: false })
    const response = await gateway.fetch(new Request(`http://gateway.test/api/v1${suffix}`))

    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({
      name: 'modelgate',
      version,
      links: { openapi: '/api/v1/openapi.json', models: '/api/v1/models', health: '/api/v1/health', readiness: '/api/v1/health/ready' },
    })
    await gateway.close()
  })

  it('leaves the host root to the host: GET / outside the base path is a 404', async () => {
    const gateway = createGateway({ logger: false })
    const response = await gateway.fetch(new Request('http://gateway.test/'))

    expect(response.status).toBe(404)
    await gateway.close()
  })

  it('links to routes that answer', async () => {
    const t = await createTestGateway()
    const { links } = await readJson(await t.call('GET', '/', { key: null }))
    for (const link of Object.values(links as Record<string, string>)) {
      const response = await t.call('GET', link.slice('/api/v1'.length), { key: null })
      expect([200, 401], link).toContain(response.status)
    }
  })
})
