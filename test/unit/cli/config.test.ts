import { describe, expect, it } from 'vitest'
import { flagsToConfig, GATEWAY_PASS_THROUGH, providersFromEnvironment, resolveConfig } from '../../../src/cli/config'
import { configFromEnvironment } from '../../../src/cli/variables'
import { ENVIRONMENT_MODEL_CONTEXT_LENGTH, modelsFromEnvironment } from '../../../src/cli/environment-models'
import { shouldWatchParent } from '../../../src/cli/parent-watch'
import { BUILT_IN_PROVIDERS, CONVENTIONAL_KEY_VARIABLES, keyVariable } from '../../../src/providers/catalog'

describe('runner configuration', () => {
  it('calls a setting it does not know an unknown setting, at any depth', () => {
    expect(() => resolveConfig({ prot: 1 } as never)).toThrow('modelgate: invalid configuration: prot: unknown setting')
    expect(() => resolveConfig({ workspaceDefaults: { textModle: 'a/b' } } as never)).toThrow(
      'modelgate: invalid configuration: workspaceDefaults.textModle: unknown setting',
    )
  })

  it('accepts the gateway settings it passes through from the config file, checked by the same rules', () => {
    const config = resolveConfig({
      retry: { maxAttempts: 2, budget: { ratio: 0.1 } },
      outlierDetection: false,
      internHistory: { maxBytes: 65_536 },
      internProvisioning: { leaseTtlMs: 60_000 },
      regionalHostnames: ['eu.example.test'],
      isRegionalDeployment: false,
      trustedHostHeader: 'X-Forwarded-Host',
      compactAfterBytes: 1_048_576,
    } as never)
    expect(config.retry).toEqual({ maxAttempts: 2, budget: { ratio: 0.1 } })
    expect(config.trustedHostHeader).toBe('x-forwarded-host')
    expect(() => resolveConfig({ retry: { maxAttempts: 0 } } as never)).toThrow('modelgate: invalid configuration: retry.maxAttempts: must be at least 1')
    expect(() => resolveConfig({ internProvisioning: { leaseTtlMs: 1000, heartbeatIntervalMs: 5000 } } as never)).toThrow(
      'heartbeatIntervalMs must be shorter than leaseTtlMs',
    )
  })

  it('passes plugin settings through from the config file, but no OCR backend (a function)', () => {
    const config = resolveConfig({ plugins: { moderation: { apiKey: 'sk-moderation-test', model: 'omni-moderation-latest' }, fileParser: { maxPages: 20 } } } as never)
    expect(config.plugins).toEqual({ moderation: { apiKey: 'sk-moderation-test', model: 'omni-moderation-latest' }, fileParser: { maxPages: 20 } })
    expect(() => resolveConfig({ plugins: { fileParser: { ocr: {} } } } as never)).toThrow('modelgate: invalid configuration: plugins.fileParser.ocr: unknown setting')
  })

  it('serves the demo models in development mode unless told otherwise, and outside it only with MODELGATE_DEMO_MODELS=1', async () => {
    const { isDemoOn } = await import('../../../src/cli/startup-report')
    const { usage } = await import('../../../src/cli/usage')
    expect(isDemoOn(resolveConfig({}))).toBe(false)
    expect(isDemoOn(resolveConfig(flagsToConfig({ dev: true })))).toBe(true)
    expect(isDemoOn(resolveConfig(configFromEnvironment({ MODELGATE_DEMO_MODELS: '1' })))).toBe(true)
    expect(isDemoOn(resolveConfig(configFromEnvironment({ MODELGATE_DEMO_MODELS: '0' }), flagsToConfig({ dev: true })))).toBe(false)
    expect(usage()).toMatch(/MODELGATE_DEMO_MODELS +1: serve the free demo models demo\/chat, demo\/tools, demo\/reasoning/)
  })

  it('reads the request body timeout and parent watching from the environment', () => {
    const config = resolveConfig(configFromEnvironment({ MODELGATE_REQUEST_BODY_TIMEOUT_MS: '120000', MODELGATE_WATCH_PARENT: '0' }))
    expect(config.requestBodyTimeoutMs).toBe(120_000)
    expect(config.watchParent).toBe(false)
    expect(resolveConfig(configFromEnvironment({ MODELGATE_WATCH_PARENT: 'true' })).watchParent).toBe(true)
    expect(resolveConfig({}).watchParent).toBeUndefined()
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_REQUEST_BODY_TIMEOUT_MS: 'soon' }))).toThrow(
      'modelgate: invalid configuration: requestBodyTimeoutMs:',
    )
  })

  it("reads the request's deadline from the environment and passes it to the gateway", () => {
    expect(resolveConfig(configFromEnvironment({ MODELGATE_REQUEST_TIMEOUT_MS: '120000' })).requestTimeoutMs).toBe(120_000)
    expect(resolveConfig({}).requestTimeoutMs).toBeUndefined()
    expect(GATEWAY_PASS_THROUGH).toContain('requestTimeoutMs')
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_REQUEST_TIMEOUT_MS: '0' }))).toThrow('modelgate: invalid configuration: requestTimeoutMs: must be at least 1')
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_REQUEST_TIMEOUT_MS: 'ten minutes' }))).toThrow('modelgate: invalid configuration: requestTimeoutMs:')
  })

  it('turns the read cache off from the environment, and takes only on or off', () => {
    expect(resolveConfig(configFromEnvironment({ MODELGATE_READ_CACHE: 'off' })).readCache).toBe('off')
    expect(resolveConfig(configFromEnvironment({ MODELGATE_READ_CACHE: 'on' })).readCache).toBe('on')
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_READ_CACHE: '0' }))).toThrow('modelgate: invalid configuration: readCache:')
  })

  it('reads the load balancing from the environment, and takes only weighted or cheapest', () => {
    expect(resolveConfig(configFromEnvironment({ MODELGATE_ROUTING_BALANCING: 'cheapest' })).routingBalancing).toBe('cheapest')
    expect(resolveConfig(configFromEnvironment({ MODELGATE_ROUTING_BALANCING: 'weighted' })).routingBalancing).toBe('weighted')
    expect(resolveConfig({}).routingBalancing).toBeUndefined()
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_ROUTING_BALANCING: 'random' }))).toThrow(
      'modelgate: invalid configuration: routingBalancing: must be weighted or cheapest',
    )
  })

  it("reads the usage ledger's retention from the environment, in whole days", () => {
    expect(resolveConfig(configFromEnvironment({ MODELGATE_LEDGER_RETENTION_DAYS: '90' })).ledgerRetentionDays).toBe(90)
    expect(resolveConfig({}).ledgerRetentionDays).toBeUndefined()
    expect(resolveConfig(configFromEnvironment({ MODELGATE_AUDIT_LOG_RETENTION_DAYS: '365' })).auditLogRetentionDays).toBe(365)
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_AUDIT_LOG_RETENTION_DAYS: '0' }))).toThrow(
      'modelgate: invalid configuration: auditLogRetentionDays: must be at least 1',
    )
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_LEDGER_RETENTION_DAYS: '0' }))).toThrow(
      'modelgate: invalid configuration: ledgerRetentionDays: must be at least 1',
    )
  })

  it('turns stored responses on from the environment, with their retention only then', () => {
    expect(resolveConfig(configFromEnvironment({ MODELGATE_STORED_RESPONSES: 'on', MODELGATE_STORED_RESPONSE_RETENTION_DAYS: '7' }))).toMatchObject({
      storedResponses: 'on',
      storedResponseRetentionDays: 7,
    })
    expect(resolveConfig({}).storedResponses).toBeUndefined()
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_STORED_RESPONSE_RETENTION_DAYS: '7' }))).toThrow(
      'modelgate: invalid configuration: storedResponseRetentionDays: has no effect unless stored responses are on (MODELGATE_STORED_RESPONSES=on)',
    )
  })

  it('turns the usage ledger off from the environment, and refuses a retention beside it', () => {
    expect(resolveConfig(configFromEnvironment({ MODELGATE_LEDGER: 'off' })).ledger).toBe('off')
    expect(resolveConfig({}).ledger).toBeUndefined()
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_LEDGER: 'false' }))).toThrow('modelgate: invalid configuration: ledger:')
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_LEDGER: 'off', MODELGATE_LEDGER_RETENTION_DAYS: '90' }))).toThrow(
      'modelgate: invalid configuration: ledgerRetentionDays: has no effect with ledger off (no records are kept)',
    )
    expect(resolveConfig(configFromEnvironment({ MODELGATE_LEDGER: 'on', MODELGATE_LEDGER_RETENTION_DAYS: '90' })).ledgerRetentionDays).toBe(90)
  })

  it('turns the dashboard on from the environment, off by default, and refuses a path without it', () => {
    expect(resolveConfig({}).dashboard).toBeUndefined()
    expect(resolveConfig(configFromEnvironment({ MODELGATE_DASHBOARD: '1' })).dashboard).toBe(true)
    expect(resolveConfig(configFromEnvironment({ MODELGATE_DASHBOARD: '0' })).dashboard).toBe(false)
    expect(resolveConfig(configFromEnvironment({ MODELGATE_DASHBOARD: 'true', MODELGATE_DASHBOARD_PATH: '/ops' })).dashboardPath).toBe('/ops')
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_DASHBOARD_PATH: '/ops' }))).toThrow(
      'modelgate: invalid configuration: dashboardPath: has no effect unless dashboard is on (MODELGATE_DASHBOARD=1)',
    )
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_DASHBOARD: '1', MODELGATE_DASHBOARD_PATH: 'ops/' }))).toThrow(
      'modelgate: invalid configuration: dashboardPath: must be a path such as /dashboard, without a trailing slash',
    )
  })

  it('reads the metrics settings, and refuses a path or port that would have no effect', () => {
    expect(resolveConfig({}).metrics).toBeUndefined()
    expect(resolveConfig(configFromEnvironment({ MODELGATE_METRICS: 'public', MODELGATE_METRICS_PATH: '/ops/metrics' }))).toMatchObject({ metrics: 'public', metricsPath: '/ops/metrics' })
    expect(resolveConfig(configFromEnvironment({ MODELGATE_METRICS_PORT: '9464' })).metricsPort).toBe(9464)
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_METRICS: 'yes' }))).toThrow('modelgate: invalid configuration: metrics:')
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_METRICS: 'off', MODELGATE_METRICS_PATH: '/m' }))).toThrow(
      'modelgate: invalid configuration: metricsPath: has no effect with metrics off',
    )
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_METRICS: 'off', MODELGATE_METRICS_PORT: '9464' }))).toThrow(
      'modelgate: invalid configuration: metricsPort: has no effect with metrics off',
    )
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_METRICS: 'public', MODELGATE_METRICS_PORT: '9464' }))).toThrow('metricsPort: is public already')
  })

  it('reads the number of workers from the environment and the flag: a whole number or auto', () => {
    expect(resolveConfig(configFromEnvironment({ MODELGATE_WORKERS: '4' })).workers).toBe(4)
    expect(resolveConfig(configFromEnvironment({ MODELGATE_WORKERS: 'auto' })).workers).toBe('auto')
    expect(resolveConfig(configFromEnvironment({ MODELGATE_WORKERS: '4' }), flagsToConfig({ workers: '2' })).workers).toBe(2)
    expect(resolveConfig({}).workers).toBeUndefined()
    for (const raw of ['0', '1.5', 'all', '257']) {
      expect(() => resolveConfig(configFromEnvironment({ MODELGATE_WORKERS: raw })), raw).toThrow(
        'modelgate: invalid configuration: workers: must be a whole number from 1 to 256, or auto (one per core)',
      )
    }
  })

  it('watches the parent under npm and npx unless told otherwise', () => {
    expect(shouldWatchParent(undefined, { npm_lifecycle_event: 'start' })).toBe(true)
    expect(shouldWatchParent(undefined, {})).toBe(false)
    expect(shouldWatchParent(false, { npm_lifecycle_event: 'start' })).toBe(false)
    expect(shouldWatchParent(true, {})).toBe(true)
  })

  it('marks a provider keyless from the environment', () => {
    expect(
      providersFromEnvironment({
        MODELGATE_PROVIDER_MY_VLLM_API: 'openai-chat',
        MODELGATE_PROVIDER_MY_VLLM_BASE_URL: 'http://127.0.0.1:8000/v1',
        MODELGATE_PROVIDER_MY_VLLM_KEYLESS: '1',
        MODELGATE_PROVIDER_OTHER_KEYLESS: '0',
      }),
    ).toMatchObject({ 'my-vllm': { api: 'openai-chat', baseURL: 'http://127.0.0.1:8000/v1', isKeyless: true } })
  })
})

describe('models from the environment', () => {
  it('lists each provider’s models at price 0, one endpoint per provider for a shared slug', () => {
    const models = modelsFromEnvironment({
      MODELGATE_PROVIDER_MY_VLLM_MODELS: 'meta/llama-local=meta-llama/Llama-3.1-8B-Instruct, qwen/qwen3-8b',
      MODELGATE_PROVIDER_BACKUP_MODELS: 'meta/llama-local=llama3.1:8b',
      UNRELATED: 'x',
    })
    const endpoint = (provider: string, model: string) => ({
      provider,
      model,
      contextLength: ENVIRONMENT_MODEL_CONTEXT_LENGTH,
      pricing: { prompt: 0, completion: 0 },
    })
    expect(models).toEqual([
      {
        slug: 'meta/llama-local',
        name: 'meta/llama-local',
        endpoints: [endpoint('my-vllm', 'meta-llama/Llama-3.1-8B-Instruct'), endpoint('backup', 'llama3.1:8b')],
      },
      { slug: 'qwen/qwen3-8b', name: 'qwen/qwen3-8b', endpoints: [endpoint('my-vllm', 'qwen/qwen3-8b')] },
    ])
  })

  it('refuses an entry that is not a model slug, naming the variable', () => {
    expect(() => modelsFromEnvironment({ MODELGATE_PROVIDER_MY_VLLM_MODELS: 'llama3=llama3:8b' })).toThrow(
      'modelgate: MODELGATE_PROVIDER_MY_VLLM_MODELS: "llama3=llama3:8b" must be <author>/<name>=<upstream model id>, or a slug <author>/<name>',
    )
    expect(() => modelsFromEnvironment({ MODELGATE_PROVIDER_X_MODELS: 'a/b=' })).toThrow('"a/b=" must be')
  })
})

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
