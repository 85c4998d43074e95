import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { deriveId, sha256Hex, timingSafeEqual } from '../../../src/core/crypto'

describe('core crypto', () => {
  it('hashes like SHA-256 over UTF-8, on whichever path the runtime offers', async () => {
    for (const value of ['', 'mg-v1-abc', 'é🗼 unicode', 'x'.repeat(10_000)]) {
      expect(await sha256Hex(value)).toBe(createHash('sha256').update(value, 'utf8').digest('hex'))
    }
  })

  it('compares in constant time by value', () => {
    expect(timingSafeEqual('abc', 'abc')).toBe(true)
    expect(timingSafeEqual('abc', 'abd')).toBe(false)
    expect(timingSafeEqual('abc', 'abcd')).toBe(false)
  })

  it('derives stable version-8 UUIDs from names', async () => {
    const id = await deriveId('guardrail:1')
    expect(id).toBe(await deriveId('guardrail:1'))
    expect(id).not.toBe(await deriveId('guardrail:2'))
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})
