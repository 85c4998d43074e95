import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { bodyReader, hangsAfterFirstDelta, sseEventsOf } from '../helpers/interrupted-stream'
import { runToEnd, startListening, type RunningProcess } from '../helpers/process'
import { startUpstream } from '../helpers/upstream'

const CLI = resolve(__dirname, '../../dist/cli.js')
const OPERATOR_KEY = 'operator-key-0123456789abcdef'

describe('modelgate CLI and standalone runner', () => {
  let dataDir: string
  const running: RunningProcess[] = []

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'modelgate-runner-'))
  })
  afterEach(async () => {
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')))
    await rm(dataDir, { recursive: true, force: true })
  })
  afterAll(async () => {
    await Promise.all(running.map((process) => process.stop('SIGKILL')))
  })

  const serve = async (env: Record<string, string> = {}) => {
    const process = await startListening('node', [CLI, 'serve'], {
      env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_LOG_LEVEL: 'warn', ...env },
    })
    running.push(process)
    return process
  }
  const cli = (...args: string[]) => runToEnd('node', [CLI, ...args], { env: { MODELGATE_DATA_DIR: dataDir } })
  const get = (url: string, key: string) => fetch(url, { headers: { authorization: `Bearer ${key}` } })

  it('ensures MODELGATE_MANAGEMENT_KEY, keeps state across a restart and stops cleanly on SIGTERM', async () => {
    const first = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
    const workspace = await get(`${first.url}/api/v1/workspaces/default`, OPERATOR_KEY)
    expect(workspace.status).toBe(200)
    const created = await fetch(`${first.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'persisted', kind: 'management' }),
    })
    expect(created.status).toBe(201)
    const { key } = (await created.json()) as { key: string }
    expect(await first.stop('SIGTERM')).toBe(0)
    expect(first.stderr()).not.toContain(OPERATOR_KEY)

    // Restart without the env key: both keys are still there.
    const second = await serve()
    expect((await get(`${second.url}/api/v1/keys`, key)).status).toBe(200)
    expect((await get(`${second.url}/api/v1/keys`, OPERATOR_KEY)).status).toBe(200)
    expect(await second.stop('SIGINT')).toBe(0)
  })

  it('ends a stream still running at the grace limit of a SIGTERM in-band, and aborts its upstream', async () => {
    const upstream = await startUpstream(hangsAfterFirstDelta)
    try {
      const aborted = upstream.nextClientAbort()
      const server = await serve({
        MODELGATE_STORAGE: 'memory',
        MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
        MODELGATE_SHUTDOWN_GRACE_SECONDS: '0.2',
        ANTHROPIC_API_KEY: 'sk-ant-runner-test-0123456789',
        MODELGATE_PROVIDER_ANTHROPIC_BASE_URL: upstream.url,
      })
      const created = await fetch(`${server.url}/api/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'caller' }),
      })
      const { key } = (await created.json()) as { key: string }
      const response = await fetch(`${server.url}/api/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'anthropic/claude-sonnet-4.5', input: 'hi', stream: true }),
      })
      const reader = bodyReader(response.body!)
      await reader.until('response.output_text.delta')
      const exited = server.stop('SIGTERM')
      const events = sseEventsOf(await reader.rest())
      expect(events.at(-1)).toBe('[DONE]')
      expect(events.at(-2).response).toMatchObject({
        status: 'failed',
        error: { code: 'server_error', message: 'The gateway is shutting down; retry the request' },
      })
      await aborted
      expect(await exited).toBe(0)
    } finally {
      await upstream.close()
    }
  })

  it('mints a management key with `keys create --management` that the next start accepts', async () => {
    const result = await cli('keys', 'create', '--management', '--name', 'bootstrap')
    expect(result.code).toBe(0)
    const key = result.stdout.trim()
    expect(key).toMatch(/^mg-v1-[0-9a-f]{64}$/)
    expect(result.stderr).toContain('Created management key "bootstrap"')
    expect(result.stderr).not.toContain(key)

    const server = await serve()
    const keys = await get(`${server.url}/api/v1/keys`, key)
    expect(keys.status).toBe(200)
    const body = (await keys.json()) as { data: Array<{ name: string; kind: string }> }
    expect(body.data).toEqual([expect.objectContaining({ name: 'bootstrap', kind: 'management' })])
  })

  it('refuses a second process on the same store with a clear message', async () => {
    await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
    const result = await cli('keys', 'create')
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/is in use by process \d+\. Stop that gateway first, or use its HTTP API/)
  })

  it('sets account flags and creates accounts', async () => {
    const flags = await cli('accounts', 'flags', '--interns')
    expect(flags.code).toBe(0)
    expect(JSON.parse(flags.stdout)).toMatchObject({ slug: 'default', flags: { interns: true } })
    const off = await cli('accounts', 'flags', '--no-interns')
    expect(JSON.parse(off.stdout).flags).toEqual({ interns: false })

    const account = await cli('accounts', 'create', '--slug', 'acme', '--name', 'Acme', '--interns')
    expect(account.code).toBe(0)
    expect(JSON.parse(account.stdout)).toMatchObject({ slug: 'acme', flags: { interns: true } })
    const key = await cli('keys', 'create', '--management', '--account', 'acme')
    expect(key.code).toBe(0)
    const duplicate = await cli('accounts', 'create', '--slug', 'acme')
    expect(duplicate.code).toBe(1)
  })

  it('reads a config file, with environment variables taking precedence', async () => {
    const configPath = join(dataDir, 'modelgate.json')
    await writeFile(configPath, JSON.stringify({ basePath: '/gateway', port: 1, storage: 'memory' }))
    const server = await serve({ MODELGATE_CONFIG: configPath, MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
    expect((await get(`${server.url}/gateway/workspaces/default`, OPERATOR_KEY)).status).toBe(200)
    expect((await get(`${server.url}/api/v1/workspaces/default`, OPERATOR_KEY)).status).toBe(404)
  })

  it('fails fast with a clear message on bad configuration', async () => {
    const badPort = await runToEnd('node', [CLI, 'serve'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: 'eighty' } })
    expect(badPort.code).toBe(1)
    expect(badPort.stderr).toContain('modelgate: invalid configuration: port:')
    const weakKey = await runToEnd('node', [CLI, 'serve'], {
      env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_MANAGEMENT_KEY: 'short' },
    })
    expect(weakKey.code).toBe(1)
    expect(weakKey.stderr).toContain('A management key must be 16 to 512 printable characters')
    const unknown = await cli('frobnicate')
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('unknown command "frobnicate"')
  })

  describe('BYOK encryption keys', () => {
    const KEY_A = 'QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE='
    const KEY_B = '4242424242424242424242424242424242424242424242424242424242424242'
    const PROVIDER_KEY = 'sk-live-provider-secret-0123456789'

    const postByok = (url: string) =>
      fetch(`${url}/api/v1/byok`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'openai', key: PROVIDER_KEY }),
      })

    it('refuses BYOK writes without a key, and refuses to start on BYOK data it could not decrypt', async () => {
      const keyless = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
      const refused = await postByok(keyless.url)
      expect(refused.status).toBe(500)
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('no encryption key is configured')
      await keyless.stop()

      const keyed = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, MODELGATE_ENCRYPTION_KEYS: KEY_A })
      expect((await postByok(keyed.url)).status).toBe(200)
      expect(await keyed.stop()).toBe(0)

      const result = await runToEnd('node', [CLI, 'serve'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0' } })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain('the store holds 1 BYOK credential(s) but no encryption key is configured')
      expect(result.stderr).not.toContain(PROVIDER_KEY)
    })

    it('rotates the master key: new key first, reencrypt, then the old key can go', async () => {
      const first = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, MODELGATE_ENCRYPTION_KEYS: KEY_A })
      expect((await postByok(first.url)).status).toBe(200)
      await first.stop()
      const moved = await runToEnd('node', [CLI, 'byok', 'reencrypt'], {
        env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_ENCRYPTION_KEYS: `${KEY_B},${KEY_A}` },
      })
      expect(moved.code).toBe(0)
      expect(JSON.parse(moved.stdout)).toEqual({ scanned: 1, moved: 1 })
      const again = await runToEnd('node', [CLI, 'byok', 'reencrypt'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_ENCRYPTION_KEYS: KEY_B } })
      expect(JSON.parse(again.stdout)).toEqual({ scanned: 1, moved: 0 })
    })

    it('generates and keeps a development key with --dev, loudly', async () => {
      const dev = await startListening('node', [CLI, 'serve', '--dev'], {
        env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY },
      })
      running.push(dev)
      expect((await postByok(dev.url)).status).toBe(200)
      expect(dev.stderr()).toContain('DEVELOPMENT MODE')
      await dev.stop()
      const generated = await runToEnd('node', [CLI, 'secrets', 'generate-key'])
      expect(generated.stdout.trim()).toMatch(/^[A-Za-z0-9+/]{43}=$/)
    })

    it('rejects a malformed encryption key at start', async () => {
      const result = await runToEnd('node', [CLI, 'serve'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_ENCRYPTION_KEYS: 'too-short' } })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain('encryption key 1 must be 32 bytes, as 64 hex characters or base64')
    })
  })
})
