/**
 * The provider facts the engine and routes read from adapters rather than from a wire format's name
 * (src/providers/contract.ts): which adapters declare each, and that the built-in wire formats are one list.
 */

import { describe, expect, it } from 'vitest'
import { ADAPTERS } from '../../../src/providers'
import { PROVIDER_APIS } from '../../../src/providers/catalog'
import type { ProviderAdapter } from '../../../src/providers/contract'

const declaring = (fact: (adapter: ProviderAdapter) => unknown) =>
  Object.fromEntries(Object.entries(ADAPTERS).flatMap(([api, adapter]) => (fact(adapter) === undefined ? [] : [[api, fact(adapter)]])))

describe('adapter capabilities', () => {
  it('has an adapter for each wire format of PROVIDER_APIS, and for no other', () => {
    expect(Object.keys(ADAPTERS).sort()).toEqual([...PROVIDER_APIS].sort())
    for (const api of PROVIDER_APIS) expect(ADAPTERS[api].api).toBe(api)
  })

  it('Anthropic alone bounds the messages of a request, at 1,000', () => {
    expect(declaring((adapter) => adapter.maxInputMessages)).toEqual({ 'anthropic-messages': 1_000 })
  })

  it("OpenAI's and Azure's APIs count prompts in o200k_base", () => {
    expect(declaring((adapter) => adapter.promptTokenizer)).toEqual({ 'openai-responses': 'o200k_base', 'azure-openai': 'o200k_base' })
  })

  it('Anthropic alone caches only the prompts a request marks', () => {
    expect(declaring((adapter) => adapter.cachesOnlyMarkedPrompts)).toEqual({ 'anthropic-messages': true })
  })

  it('Azure alone reads a structured credential', () => {
    expect(Object.keys(declaring((adapter) => adapter.credential))).toEqual(['azure-openai'])
  })
})
