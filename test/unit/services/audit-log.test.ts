import { describe, expect, it } from 'vitest'
import { redactChanges } from '../../../src/services/audit-log'

describe('what an audit entry keeps of a change', () => {
  const hash = 'ab'.repeat(32)

  it('keeps only that a secret was set, by the field names secrets go under, however deep', () => {
    expect(redactChanges({ key: 'sk-live-123', name: 'team', nested: { api_key: 'x', token: null }, list: [{ password: 'p' }] })).toEqual({
      key: '[redacted]',
      name: 'team',
      nested: { api_key: '[redacted]', token: null },
      list: [{ password: '[redacted]' }],
    })
  })

  it('cuts key hashes to their first 8 characters, in the hash fields and anywhere a whole hash appears', () => {
    expect(redactChanges({ allowed_api_key_hashes: [hash], key_hashes: [hash], hash, note: `rotated ${hash} today` })).toEqual({
      allowed_api_key_hashes: ['abababab'],
      key_hashes: ['abababab'],
      hash: 'abababab',
      note: 'rotated abababab… today',
    })
  })

  it('redacts a raw key of ours sent under any name, and cuts long strings to their start and length', () => {
    const rawKey = `mg-v1-${'0f'.repeat(32)}`
    expect(redactChanges({ name: `oops ${rawKey}` })).toEqual({ name: 'oops [redacted]' })
    const long = 'x'.repeat(1000)
    expect(redactChanges({ instructions: long })).toEqual({ instructions: `${'x'.repeat(256)}… (1000 characters)` })
  })

  it('drops omitted fields and keeps explicit nulls', () => {
    expect(redactChanges({ name: undefined, limit: null, disabled: false })).toEqual({ limit: null, disabled: false })
  })
})
