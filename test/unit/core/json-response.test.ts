import { describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { JsonResponse, jsonResponse } from '../../../src/core/json-response'
import { materialize } from '../../../src/core/materialize'

describe('JsonResponse', () => {
  it('is a Response with its status, headers and JSON body', async () => {
    const response = jsonResponse('{"a":1}', 201, { 'x-extra': 'yes' })

    expect(response).toBeInstanceOf(Response)
    expect(response.status).toBe(201)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('x-extra')).toBe('yes')
    expect(response.bodyUsed).toBe(false)
    expect(await response.json()).toEqual({ a: 1 })
    expect(response.bodyUsed).toBe(true)
    await expect(response.text()).rejects.toBeInstanceOf(TypeError)
  })

  it('makes a body stream only when asked, and counts reading it as using the body', async () => {
    const response = jsonResponse('{"a":"é"}', 200)

    const text = await new Response(response.body).text()

    expect(text).toBe('{"a":"é"}')
    expect(response.bodyUsed).toBe(true)
    await expect(response.arrayBuffer()).rejects.toBeInstanceOf(TypeError)
  })

  it('clones into an independent response', async () => {
    const response = jsonResponse('[1]', 200)
    const copy = response.clone()

    expect(await copy.json()).toEqual([1])
    expect(await response.arrayBuffer()).toEqual(new TextEncoder().encode('[1]').buffer)
    expect(copy).toBeInstanceOf(JsonResponse)
  })

  it('materializes into a plain Response with the same status, headers and body', async () => {
    const response = jsonResponse('{"ok":true}', 404, { 'x-request-id': 'r1' })

    const plain = materialize(response)

    expect(plain).not.toBeInstanceOf(JsonResponse)
    expect(plain.status).toBe(404)
    expect(plain.headers.get('x-request-id')).toBe('r1')
    expect(await plain.json()).toEqual({ ok: true })
  })
})

describe('gateway.fetch', () => {
  it('hands callers plain Responses, which host runtimes can serve natively', async () => {
    const gateway = createGateway({ logger: false })

    const response = await gateway.fetch(new Request('http://localhost/api/v1/keys'))

    expect(response.constructor).toBe(Response)
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ error: { code: 401 } })
    await gateway.close()
  })
})
