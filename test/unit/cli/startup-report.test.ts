import { describe, expect, it } from 'vitest'
import { resolveConfig } from '../../../src/cli/config'
import { formatFirstManagementKey } from '../../../src/cli/first-run'
import { describeStore, productionGaps, providerWarnings } from '../../../src/cli/startup-report'
import { explainStoreFailure } from '../../../src/cli/storage'
import { StorageUnavailableError } from '../../../src/core/errors'

describe('the start-up report', () => {
  it('shows the store without credentials', () => {
    expect(describeStore(resolveConfig({ storage: 'postgres://app:s3cret@127.0.0.1:5432/app' }))).toEqual({ storage: 'postgres://***@127.0.0.1:5432/app' })
    expect(describeStore(resolveConfig({ storage: 'memory' }))).toEqual({ storage: 'memory' })
    expect(describeStore(resolveConfig({ dataDir: '/srv/modelgate' }))).toEqual({ storage: 'sqlite', path: '/srv/modelgate/modelgate.db' })
    expect(describeStore(resolveConfig({ storage: 'sqlite:/var/lib/mg/store.db' }))).toEqual({ storage: 'sqlite', path: '/var/lib/mg/store.db' })
    expect(describeStore(resolveConfig({ storage: 'sqlite:///var/lib/mg/store.db' }))).toEqual({ storage: 'sqlite', path: '/var/lib/mg/store.db' })
    expect(describeStore(resolveConfig({ storage: 'file', dataDir: '/srv/modelgate' }))).toEqual({ storage: 'file', dataDir: '/srv/modelgate' })
  })

  it('warns about a provider no model uses, and about having no shared provider at all', () => {
    expect(providerWarnings({ openai: { apiKey: 'sk-x' } }, [])).toEqual([])
    expect(providerWarnings({}, [])).toEqual([expect.stringContaining('no provider has a shared API key')])
    expect(providerWarnings({}, [], true)).toEqual([expect.stringContaining('only the demo models (demo/chat, demo/tools, demo/reasoning) and requests from workspaces')])
    const models = [{ slug: 'meta/llama', name: 'Llama', endpoints: [{ provider: 'my-vllm', model: 'l', contextLength: 1, pricing: { prompt: 0, completion: 0 } }] }]
    expect(providerWarnings({ 'my-vllm': { isKeyless: true }, 'other-box': { isKeyless: true } }, models)).toEqual([
      expect.stringContaining('provider "other-box" is configured but no model uses it: list its models with MODELGATE_PROVIDER_OTHER_BOX_MODELS='),
    ])
  })

  it('lists what production still needs, and nothing once it is there', () => {
    // The default SQLite store serves every process of its machine.
    expect(productionGaps(resolveConfig({ dev: true }))).toEqual([expect.stringMatching(/^encryption keys: /), expect.stringMatching(/^a management key of your own: /)])
    expect(productionGaps(resolveConfig({ dev: true, storage: 'file' }))).toContainEqual(
      expect.stringMatching(/^a store that keeps state for several processes: the embedded file store serves one process; use MODELGATE_STORAGE=sqlite/),
    )
    expect(productionGaps(resolveConfig({ dev: true, storage: 'memory' }))).toContainEqual(expect.stringContaining('the memory store keeps nothing'))
    expect(
      productionGaps(resolveConfig({ dev: true, encryptionKeys: ['k'], managementKey: 'operator-key-0123456789', storage: 'redis://127.0.0.1:6379' })),
    ).toEqual([])
  })

  it('prints the first management key with a ready-to-paste curl', () => {
    const block = formatFirstManagementKey('mg-v1-abc', 'http://127.0.0.1:8787/api/v1')
    expect(block).toContain('\n    mg-v1-abc\n')
    expect(block).toContain("curl -X POST http://127.0.0.1:8787/api/v1/keys \\\n      -H 'Authorization: Bearer mg-v1-abc' \\\n")
  })

  it('names the store, password masked, and the cause of an outage at start', () => {
    const outage = new StorageUnavailableError('Storage is unavailable', { cause: new Error('connect ECONNREFUSED 127.0.0.1:6390') })
    const explained = explainStoreFailure(outage, resolveConfig({ storage: 'redis://:pw@127.0.0.1:6390' })) as Error
    expect(explained.message).toBe('modelgate: cannot reach the store at redis://***@127.0.0.1:6390: connect ECONNREFUSED 127.0.0.1:6390')
    const busy = new StorageUnavailableError('Storage is unavailable', { cause: new Error('database is locked') })
    expect((explainStoreFailure(busy, resolveConfig({ dataDir: '/srv/modelgate' })) as Error).message).toBe(
      'modelgate: cannot reach the store in /srv/modelgate/modelgate.db: database is locked',
    )
    const other = new Error('something else')
    expect(explainStoreFailure(other, resolveConfig({}))).toBe(other)
  })
})
