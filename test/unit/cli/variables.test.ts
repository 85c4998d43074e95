/**
 * The runner's one table of environment variables (src/cli/variables.ts): every variable src reads is in it, each
 * one fills a setting, docs/configuration.md is generated from it and committed fresh, and a misspelt variable is
 * warned about by the closest known name, never by its value.
 */

import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CONFIGURATION_DOC, configFileOnlySettings, renderConfigurationDoc } from '../../../scripts/generate-configuration-doc'
import { cliCommand } from '../../../src/cli/cli-command'
import { RunnerSettingsSchema, resolveConfig } from '../../../src/cli/config'
import { logStartup } from '../../../src/cli/startup-report'
import { CONFIG_FILE_ONLY, RUNNER_VARIABLES, configFromEnvironment, providerKeyVariables, unknownVariableWarnings } from '../../../src/cli/variables'
import { usage } from '../../../src/cli/usage'

const sourceFiles = (directory: string): string[] =>
  readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })

const known = new Set(RUNNER_VARIABLES.map((variable) => variable.name))

describe('the runner’s environment variables', () => {
  it('include every MODELGATE_* variable that src reads', () => {
    const read = new Set<string>()
    for (const file of sourceFiles('src')) {
      const text = readFileSync(file, 'utf8')
      for (const match of text.matchAll(/\b(?:process\.env|env|environment)(?:\.|\[\s*['"`])(MODELGATE_[A-Z0-9_]+)/g)) read.add(match[1]!)
    }
    expect(read.size).toBeGreaterThan(0) // MODELGATE_CONFIG, read by src/cli/main.ts
    expect([...read].filter((name) => !known.has(name))).toEqual([])
  })

  it('each fill a setting of the runner, so none is accepted without effect', () => {
    for (const variable of RUNNER_VARIABLES.filter((candidate) => candidate.setting !== undefined)) {
      const value = variable.name.endsWith('_MS') || variable.name.endsWith('_SECONDS') || variable.name.endsWith('_BYTES') || /LIMIT|PORT|DAYS|REQUESTS|WORKERS/.test(variable.name) ? '4096' : '1'
      const config = configFromEnvironment({ [variable.name]: value }) as Record<string, unknown>
      const filled = variable.upstreamField ? (config.upstream as Record<string, unknown> | undefined)?.[variable.upstreamField] : config[variable.setting!]
      expect(filled, variable.name).toBeDefined()
    }
    expect(resolveConfig(configFromEnvironment({ PORT: '9000', MODELGATE_PORT: '9001' })).port).toBe(9001)
  })

  it('leave no setting of the config file undescribed', () => {
    for (const setting of configFileOnlySettings()) expect(CONFIG_FILE_ONLY[setting as keyof typeof CONFIG_FILE_ONLY], setting).toBeTruthy()
    const described = new Set([...RUNNER_VARIABLES.map((variable) => variable.setting), ...Object.keys(CONFIG_FILE_ONLY)])
    expect(Object.keys(RunnerSettingsSchema.entries).filter((setting) => !described.has(setting as never))).toEqual([])
  })

  it('are all in --help, with the 13 conventional provider key variables', () => {
    const help = usage()
    expect(providerKeyVariables()).toHaveLength(13)
    for (const { name } of [...RUNNER_VARIABLES, ...providerKeyVariables()]) expect(help).toMatch(new RegExp(`^  ${name}\\s`, 'm'))
  })

  it('are documented in docs/configuration.md as `npm run docs:config` writes it (run it after changing the table)', () => {
    const committed = readFileSync(CONFIGURATION_DOC, 'utf8')
    expect(renderConfigurationDoc(committed)).toBe(committed)
    for (const { name } of [...RUNNER_VARIABLES, ...providerKeyVariables()]) expect(committed).toContain(`\`${name}\``)
  })
})

describe('a misspelt MODELGATE_* variable', () => {
  it('is warned about once, naming the closest known variable and never the value', () => {
    const warnings = unknownVariableWarnings({ MODELGATE_PROT: 's3cret-value', MODELGATE_STORGE: 'redis://x', MODELGATE_PORT: '1', HOME: '/root' })
    expect(warnings).toEqual([
      'unknown environment variable MODELGATE_PROT is ignored; did you mean MODELGATE_PORT? (modelgate --help lists every variable)',
      'unknown environment variable MODELGATE_STORGE is ignored; did you mean MODELGATE_STORAGE? (modelgate --help lists every variable)',
    ])
    expect(unknownVariableWarnings({ MODELGATE_UPSTREAM_IDLE_TIMOUT_MS: '5' })).toEqual([expect.stringContaining('did you mean MODELGATE_UPSTREAM_IDLE_TIMEOUT_MS?')])
  })

  it('is not confused with the known variables, nor with provider variables', () => {
    const environment = Object.fromEntries(RUNNER_VARIABLES.map((variable) => [variable.name, 'x']))
    expect(unknownVariableWarnings({ ...environment, MODELGATE_PROVIDER_MY_VLLM_API_KEY: 'k', MODELGATE_PROVIDER_MY_VLLM_MODELS: 'a/b' })).toEqual([])
    expect(unknownVariableWarnings({ MODELGATE_PROVIDER_MY_VLLM_APIKEY: 'k' })).toEqual([
      expect.stringContaining('did you mean MODELGATE_PROVIDER_<ID>_API_KEY, _BASE_URL, _API, _KEYLESS or _MODELS?'),
    ])
  })

  it('is logged by the start-up report, without its value', () => {
    const lines: string[] = []
    const record = (message: string, fields?: unknown) => void lines.push(`${message} ${JSON.stringify(fields ?? {})}`)
    const logger = { debug: record, info: record, warn: record, error: record }
    logStartup(logger, resolveConfig({ encryptionKeys: ['k'] }), { url: 'http://127.0.0.1:8787/api/v1', providers: {}, models: [], environment: { MODELGATE_LOG_LEVLE: 'debug-secret' } })
    expect(lines.filter((line) => line.includes('MODELGATE_LOG_LEVLE'))).toEqual([expect.stringContaining('did you mean MODELGATE_LOG_LEVEL?')])
    expect(lines.join('\n')).not.toContain('debug-secret')
  })
})

describe('the commands the runner names', () => {
  it('work where they are pasted: npm run in a clone, npx where the package is installed', () => {
    expect(cliCommand('keys create --management', 'file:///repo/src/cli/cli-command.ts')).toBe('npm run modelgate -- keys create --management')
    expect(cliCommand('keys create --management', 'file:///app/node_modules/modelgate/dist/cli.js')).toBe('npx modelgate keys create --management')
  })
})
