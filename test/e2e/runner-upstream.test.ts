/**
 * The runner takes upstream deadlines and size bounds from its config file and the environment, and applies
 * them: a loopback upstream that stalls mid-answer is cut at the idle timeout, one that answers too much at the
 * size bound. (Run after `npm run build`.)
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { fixture, startUpstream, type Upstream, type UpstreamReply } from '../helpers/upstream'
import { runToEnd, startListening, type RunningProcess } from '../helpers/process'

const CLI = resolve(__dirname, '../../dist/cli.js')
const OPERATOR_KEY = 'operator-key-0123456789abcdef'

describe('runner: upstream settings', () => {
  let dataDir: string
  let upstream: Upstream
  const running: RunningProcess[] = []
  const releases: Array<() => void> = []

  beforeAll(async () => {
    upstream = await startUpstream()
  })
  afterAll(() => upstream.close())
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'modelgate-runner-upstream-'))
  })
  afterEach(async () => {
    releases.splice(0).forEach((release) => release())
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')))
    await rm(dataDir, { recursive: true, force: true })
  })

  const post = (url: string, path: string, key: string, body: unknown) =>
    fetch(`${url}/api/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })

  /** Starts the runner on a memory store with `settings` in its config file and OpenAI on the loopback upstream; resolves with a regular key. */
  const startRunner = async (settings: Record<string, unknown>, env: Record<string, string> = {}) => {
    const configPath = join(dataDir, 'modelgate.json')
    await writeFile(
      configPath,
      JSON.stringify({ storage: 'memory', providers: { openai: { baseURL: upstream.url, apiKey: 'sk-runner-openai-0123456789abcdef' } }, ...settings }),
    )
    const server = await startListening('node', [CLI, 'serve'], {
      env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_LOG_LEVEL: 'error', MODELGATE_CONFIG: configPath, MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, ...env },
    })
    running.push(server)
    const created = await post(server.url, '/keys', OPERATOR_KEY, { name: 'caller' })
    expect(created.status).toBe(201)
    return { server, key: ((await created.json()) as { key: string }).key }
  }

  it('applies upstream timeouts and size bounds from the config file and the environment', async () => {
    const { server, key } = await startRunner(
      // The environment overrides idleTimeoutMs; the rest stays as the file says.
      { upstream: { idleTimeoutMs: 600_000, firstByteTimeoutMs: 600_000, totalTimeoutMs: 600_000, maxResponseBytes: 4096 } },
      { MODELGATE_UPSTREAM_IDLE_TIMEOUT_MS: '200' },
    )

    const json = fixture('openai', 'text.json')
    upstream.setHandler((): UpstreamReply => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      chunks: [json.subarray(0, 40), json.subarray(40)],
      pause: { after: 1, until: new Promise<void>((release) => releases.push(release)) },
    }))
    const stalled = await post(server.url, '/responses', key, { model: 'openai/gpt-4.1', input: 'hi' })
    expect(stalled.status).toBe(524)
    expect(((await stalled.json()) as { error: { message: string } }).error.message).toBe('OpenAI: No answer in time (idle between chunks)')

    upstream.setHandler(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"padding":"${'x'.repeat(8192)}"}` }))
    const large = await post(server.url, '/responses', key, { model: 'openai/gpt-4.1', input: 'hi' })
    expect(large.status).toBe(502)
    expect(((await large.json()) as { error: { message: string } }).error.message).toBe("OpenAI: The provider's answer is larger than the gateway accepts (4 KiB)")
  })

  it('hands retry settings from the config file to the gateway', async () => {
    // Two models on one provider that is down: by default the second is tried as a fallback; one attempt is allowed here.
    const { server, key } = await startRunner({ retry: { maxAttempts: 1, budget: false }, outlierDetection: false })
    upstream.setHandler(() => ({ status: 503, headers: { 'content-type': 'application/json' }, body: '{"error":{"message":"down"}}' }))
    const before = upstream.requests.length
    const answer = await post(server.url, '/responses', key, { model: 'openai/gpt-4.1', models: ['openai/gpt-4.1-mini'], input: 'hi' })
    expect(answer.status).toBe(529)
    expect(upstream.requests.length - before).toBe(1)
  })

  it('refuses to start on a malformed upstream setting, naming it', async () => {
    const result = await runToEnd('node', [CLI, 'serve'], {
      env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_UPSTREAM_MAX_EVENT_BYTES: 'lots' },
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('modelgate: invalid configuration: upstream.maxEventBytes:')
  })
})
