import { describe, expect, it } from 'vitest'
import { resolveConfig } from '../../../src/cli/config'
import { configFromEnvironment } from '../../../src/cli/variables'

describe('runner configuration: upstream settings', () => {
  it('reads every upstream setting from the environment', () => {
    const config = resolveConfig(
      configFromEnvironment({
        MODELGATE_UPSTREAM_CONNECT_TIMEOUT_MS: '1500',
        MODELGATE_UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '20000',
        MODELGATE_UPSTREAM_IDLE_TIMEOUT_MS: '30000',
        MODELGATE_UPSTREAM_TOTAL_TIMEOUT_MS: '120000',
        MODELGATE_UPSTREAM_MAX_RESPONSE_BYTES: '16777216',
        MODELGATE_UPSTREAM_MAX_EVENT_BYTES: '4194304',
      }),
    )
    expect(config.upstream).toEqual({
      connectTimeoutMs: 1500,
      firstByteTimeoutMs: 20_000,
      idleTimeoutMs: 30_000,
      totalTimeoutMs: 120_000,
      maxResponseBytes: 16_777_216,
      maxEventBytes: 4_194_304,
    })
  })

  it('accepts `upstream` in the config file, the environment winning field by field', () => {
    const fromFile = { upstream: { idleTimeoutMs: 1000, maxResponseBytes: 4096 } }
    const config = resolveConfig(fromFile, configFromEnvironment({ MODELGATE_UPSTREAM_IDLE_TIMEOUT_MS: '2000', MODELGATE_UPSTREAM_TOTAL_TIMEOUT_MS: '9000' }))
    expect(config.upstream).toEqual({ idleTimeoutMs: 2000, maxResponseBytes: 4096, totalTimeoutMs: 9000 })
    expect(resolveConfig(fromFile, configFromEnvironment({})).upstream).toEqual(fromFile.upstream)
  })

  it('accepts the upstream guard policy in the config file', () => {
    const upstreamGuard = { allowPrivateNetworks: ['127.0.0.0/8'], allowHttp: true, allowedPorts: [8443], extraHostSuffixes: { azure: ['openai.azure.us'] } }
    expect(resolveConfig({ upstreamGuard }).upstreamGuard).toEqual(upstreamGuard)
  })

  it('names the setting when a value is wrong', () => {
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_UPSTREAM_IDLE_TIMEOUT_MS: 'soon' }))).toThrow(
      /^modelgate: invalid configuration: upstream\.idleTimeoutMs: /,
    )
    expect(() => resolveConfig({ upstream: { maxEventBytes: 10 } } as never)).toThrow(/^modelgate: invalid configuration: upstream\.maxEventBytes: /)
    expect(() => resolveConfig({ upstream: { idleTimeout: 10 } } as never)).toThrow(/^modelgate: invalid configuration: upstream/)
    expect(() => resolveConfig({ upstreamGuard: { resolve: 'dns' } } as never)).toThrow(/^modelgate: invalid configuration: upstreamGuard/)
  })
})
