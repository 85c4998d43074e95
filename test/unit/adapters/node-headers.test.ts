import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import { copyNodeHeaders, NodeHeaders } from '../../../src/adapters/node-headers'

const incoming = (headers: Record<string, string | string[]>) => ({ headers }) as unknown as IncomingMessage

const parsed = {
  authorization: 'Bearer sk-test',
  'content-type': 'application/json',
  'x-padded': ' spaced ',
  'set-cookie': ['a=1', 'b=2'],
  ':path': '/api/v1/responses',
}

describe('NodeHeaders', () => {
  it('answers every read as the full Headers copy does', () => {
    const view = new NodeHeaders(incoming(parsed))
    const copy = copyNodeHeaders(incoming(parsed))
    for (const name of ['authorization', 'Authorization', 'content-type', 'x-padded', 'set-cookie', 'missing', 'constructor']) {
      expect(view.get(name), name).toBe(copy.get(name))
      expect(view.has(name), name).toBe(copy.has(name))
    }
    expect(view.get('x-padded')).toBe('spaced')
    expect(view.get('set-cookie')).toBe('a=1, b=2')
    expect(view.getSetCookie()).toEqual(['a=1', 'b=2'])
    expect([...view]).toEqual([...copy])
    expect(() => view.get(':path')).toThrow(TypeError)
  })

  it('reads its own writes once changed', () => {
    const view = new NodeHeaders(incoming(parsed))
    view.set('authorization', 'Bearer other')
    view.delete('content-type')
    view.append('x-added', '1')
    expect(view.get('authorization')).toBe('Bearer other')
    expect(view.has('content-type')).toBe(false)
    expect(view.get('x-added')).toBe('1')
    expect(new Headers(view).get('authorization')).toBe('Bearer other')
  })
})
