import { describe, expect, it } from 'vitest'
import { providersFromEnvironment } from '../../../src/cli/config'
import { BUILT_IN_PROVIDERS, CONVENTIONAL_KEY_VARIABLES, keyVariable } from '../../../src/providers/catalog'

describe('provider keys from the environment', () => {
  it('reads, for every built-in provider, the variable that "no key" errors name', () => {
    for (const { id } of BUILT_IN_PROVIDERS) {
      expect(providersFromEnvironment({ [keyVariable(id)]: `key-for-${id}` })[id], id).toEqual({ apiKey: `key-for-${id}` })
    }
  })

  it('reads every conventional name, the first one present winning', () => {
    for (const [id, names] of Object.entries(CONVENTIONAL_KEY_VARIABLES)) {
      for (const name of names) expect(providersFromEnvironment({ [name]: 'k' })[id]).toEqual({ apiKey: 'k' })
    }
    expect(providersFromEnvironment({ GEMINI_API_KEY: 'gemini', GOOGLE_API_KEY: 'google' })['google-ai-studio']).toEqual({ apiKey: 'gemini' })
  })

  it('reads any provider from MODELGATE_PROVIDER_<ID>_*', () => {
    expect(
      providersFromEnvironment({ MODELGATE_PROVIDER_MY_VLLM_API: 'openai-chat', MODELGATE_PROVIDER_MY_VLLM_BASE_URL: 'http://127.0.0.1:8000/v1' })['my-vllm'],
    ).toEqual({ api: 'openai-chat', baseURL: 'http://127.0.0.1:8000/v1' })
  })
})
