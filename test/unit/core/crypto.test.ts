import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { deriveId, hmacSha256Hex, sha256Hex, timingSafeEqual } from '../../../src/core/crypto'
import { endUserIdFor } from '../../../src/engine/end-user'

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

describe('hmacSha256Hex', () => {
  it('matches RFC 4231 test case 2 and Web Crypto', async () => {
    const expected = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'
    expect(await hmacSha256Hex('Jefe', 'what do ya want for nothing?')).toBe(expected)
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('Jefe'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode('what do ya want for nothing?')))
    expect(Buffer.from(signature).toString('hex')).toBe(expected)
  })

  it('hashes non-ASCII keys and messages as UTF-8', async () => {
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('clé:ñ'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode('usér 👋')))
    expect(await hmacSha256Hex('clé:ñ', 'usér 👋')).toBe(Buffer.from(signature).toString('hex'))
  })
})

describe('endUserIdFor', () => {
  it('is the first 16 bytes of HMAC-SHA-256 over the end user, keyed by secret and account, as before', async () => {
    const reference = async (endUser: string) => {
      const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('modelgate-end-user:s3cret:acct_1'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
      const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(endUser)))
      return `mg_${Buffer.from(signature.subarray(0, 16)).toString('hex')}`
    }
    expect(await endUserIdFor('s3cret', 'acct_1', 'alice@example.com')).toBe(await reference('alice@example.com'))
    expect(await endUserIdFor('s3cret', 'acct_1', undefined)).toBe(await reference('\u0000account'))
  })
})
