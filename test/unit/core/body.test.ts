import { beforeEach, describe, expect, it } from 'vitest'
import { createGateway } from '../../../src/gateway/gateway'
import { silentLogger } from '../../../src/core/logger'
import { BASE, createTestGateway, readJson, type TestGateway } from '../../helpers/gateway'

const LIMIT = 1_048_576

/** A body stream that counts what the gateway pulled, producing `chunk`-sized pieces up to `total` bytes. */
const countingStream = (total: number, chunk = 64 * 1024) => {
  const state = { pulled: 0, cancelled: false }
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled >= total) return controller.close()
      const size = Math.min(chunk, total - state.pulled)
      state.pulled += size
      controller.enqueue(new Uint8Array(size).fill(0x20))
    },
    cancel() {
      state.cancelled = true
    },
  })
  return { stream, state }
}

describe('shared body handling', () => {
  let t: TestGateway
  beforeEach(async () => {
    t = await createTestGateway()
  })

  const post = (body: BodyInit | null, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    t.gateway.fetch(
      new Request(`${BASE}/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.managementKey}`, ...headers },
        body,
        // @ts-expect-error Node's fetch needs duplex for stream bodies
        duplex: 'half',
      }),
    )

  it('answers 413 from the declared length without reading the body', async () => {
    const { stream, state } = countingStream(LIMIT + 1)
    const response = await post(stream, { 'content-type': 'application/json', 'content-length': String(LIMIT + 1) })
    expect(response.status).toBe(413)
    expect(await readJson(response)).toEqual({ error: { code: 413, message: `Request body exceeds the limit of ${LIMIT} bytes` } })
    expect(state.pulled).toBeLessThanOrEqual(64 * 1024 * 2)
  })

  it('stops reading a chunked body at the limit (413) instead of buffering it whole', async () => {
    const { stream, state } = countingStream(50 * LIMIT)
    const response = await post(stream)
    expect(response.status).toBe(413)
    expect(await readJson(response)).toEqual({ error: { code: 413, message: `Request body exceeds the limit of ${LIMIT} bytes` } })
    expect(state.cancelled).toBe(true)
    expect(state.pulled).toBeLessThan(LIMIT + 3 * 64 * 1024)
  })

  it('still answers 413 when a Request declares a length under the limit and carries more', async () => {
    const { stream } = countingStream(LIMIT + 1)
    const response = await post(stream, { 'content-type': 'application/json', 'content-length': '10' })
    expect(response.status).toBe(413)
    expect(await readJson(response)).toEqual({ error: { code: 413, message: `Request body exceeds the limit of ${LIMIT} bytes` } })
  })

  it('accepts a body of exactly the limit', async () => {
    const json = JSON.stringify({ name: 'edge' })
    const padded = json + ' '.repeat(LIMIT - json.length)
    expect(new TextEncoder().encode(padded).byteLength).toBe(LIMIT)
    expect((await post(padded)).status).toBe(201)
    expect((await post(padded + ' ')).status).toBe(413)
  })

  it('honours a configured default limit', async () => {
    const gateway = createGateway({ bodyLimit: 2048, logger: silentLogger })
    const { key } = await gateway.admin.createKey({ kind: 'management' })
    const request = (size: number) =>
      gateway.fetch(
        new Request(`${BASE}/keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'x'.repeat(size) }),
        }),
      )
    expect((await request(100)).status).toBe(201)
    const response = await request(3000)
    expect(response.status).toBe(413)
    expect(await readJson(response)).toEqual({ error: { code: 413, message: 'Request body exceeds the limit of 2048 bytes' } })
  })

  it('model requests take inferenceBodyLimit on every inference route, other routes bodyLimit', async () => {
    const gateway = createGateway({ bodyLimit: 2048, inferenceBodyLimit: 8192, logger: silentLogger })
    const { key } = await gateway.admin.createKey({ kind: 'management' })
    const { key: regular } = await gateway.admin.createKey({ kind: 'regular' })
    // Content-Length decides before anything is read or routed further.
    const send = (path: string, bytes: number, apiKey = regular) =>
      gateway.fetch(
        new Request(`${BASE}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': String(bytes) },
          body: ' '.repeat(bytes),
        }),
      )
    for (const path of ['/responses', '/chat/completions', '/messages', '/embeddings']) {
      const over = await send(path, 8193)
      expect(over.status, path).toBe(413)
      expect(JSON.stringify(await readJson(over)), path).toContain('Request body exceeds the limit of 8192 bytes')
      // Between the two limits: read (and refused for what it says, not for its size).
      expect((await send(path, 4096)).status, path).not.toBe(413)
    }
    expect((await send('/keys', 4096, key)).status).toBe(413)
  })

  it('answers 415 for a non-empty body that is not application/json', async () => {
    for (const headers of [{ 'content-type': 'text/plain' }, {}, { 'content-type': 'application/jsonx' }]) {
      const response = await post('{"name":"x"}', headers as Record<string, string>)
      expect(response.status).toBe(415)
      expect(await readJson(response)).toEqual({ error: { code: 415, message: 'Content-Type must be application/json' } })
    }
  })

  it('accepts application/json with parameters and any case', async () => {
    expect((await post('{"name":"x"}', { 'content-type': 'Application/JSON; charset=utf-8' })).status).toBe(201)
  })

  it('treats an empty body as no fields, whatever its content type', async () => {
    const response = await post(null, {})
    expect(response.status).toBe(400)
    expect(await readJson(response)).toEqual({ error: { code: 400, message: 'body.name: is required' } })
  })

  it('names where malformed JSON broke, without echoing the body', async () => {
    const cases: Array<[string, string]> = [
      ['{"name": sk-secret-value}', 'Malformed JSON in request body at line 1, column 10: expected a value'],
      ['{"name": "x",\n  oops}', 'Malformed JSON in request body at line 2, column 3: expected a double-quoted property name'],
      ['{"name": "x"', "Malformed JSON in request body: unexpected end of input, expected ',' or '}'"],
      ['{"name": "x"} trailing', 'Malformed JSON in request body at line 1, column 15: expected the end of the input'],
      ['{"name" "x"}', "Malformed JSON in request body at line 1, column 9: expected ':' after the property name"],
      ['[1, 2,]', 'Malformed JSON in request body at line 1, column 7: expected a value'],
      ['{"name": "a\\qb"}', 'Malformed JSON in request body at line 1, column 12: expected a valid escape sequence'],
      ['   ', 'Malformed JSON in request body: the body is only whitespace'],
    ]
    for (const [body, message] of cases) {
      const response = await post(body)
      expect(response.status, body).toBe(400)
      const text = await response.text()
      expect(JSON.parse(text)).toEqual({ error: { code: 400, message } })
      expect(text).not.toContain('secret')
    }
  })

  it('rejects a body that is not UTF-8', async () => {
    const response = await post(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))
    expect(response.status).toBe(400)
    expect(await readJson(response)).toEqual({ error: { code: 400, message: 'Request body is not valid UTF-8' } })
  })
})
