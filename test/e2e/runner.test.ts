import { createHash } from 'node:crypto'
import http from 'node:http'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { readFileSync } from 'node:fs'
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { RUNNER_VARIABLES, providerKeyVariables } from '../../src/cli/variables'
import { bodyReader, hangsAfterFirstDelta, sseEventsOf } from '../helpers/interrupted-stream'
import { runToEnd, startListening, stopAndDrain, type RunningProcess } from '../helpers/process'
import { REDIS_URL, dropRedisPrefix, requireServer, uniqueNamespace } from '../helpers/stores'
import { fixture, startUpstream } from '../helpers/upstream'

const CLI = resolve(__dirname, '../../dist/cli.js')
const OPERATOR_KEY = 'operator-key-0123456789abcdef'
const manifest = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8')) as { version: string }

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
    const first = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, MODELGATE_LOG_LEVEL: 'info' })
    const workspace = await get(`${first.url}/api/v1/workspaces/default`, OPERATOR_KEY)
    expect(workspace.status).toBe(200)
    const created = await fetch(`${first.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'persisted', kind: 'management' }),
    })
    expect(created.status).toBe(201)
    const { key } = (await created.json()) as { key: string }
    expect(await stopAndDrain(first)).toBe(0)
    expect(first.stderr()).not.toContain(OPERATOR_KEY)
    // Not even the 7 characters of its label: the log names the key by its hash prefix.
    expect(first.stderr()).not.toContain(`${OPERATOR_KEY.slice(0, 3)}...${OPERATOR_KEY.slice(-4)}`)
    expect(first.stderr()).toContain(`"hashPrefix":"${createHash('sha256').update(OPERATOR_KEY).digest('hex').slice(0, 12)}"`)
    // With a key of its own, nothing is minted.
    expect(first.stdout()).not.toContain('mg-v1-')

    // Restart without the env key: both keys are still there.
    const second = await serve()
    expect((await get(`${second.url}/api/v1/keys`, key)).status).toBe(200)
    expect((await get(`${second.url}/api/v1/keys`, OPERATOR_KEY)).status).toBe(200)
    expect(await second.stop('SIGINT')).toBe(0)
  })

  it('ends a stream still running at the grace limit of a SIGTERM in-band, and aborts its upstream', async () => {
    const upstream = await startUpstream(() => hangsAfterFirstDelta())
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

  /**
   * Nothing here waits for time: the grace period is two minutes and the test's own limit 30 s, so the runner exiting
   * at all proves it let go of the keep-alive connections as their requests ended, not when the grace period did.
   */
  it('exits on SIGTERM as soon as the last request ended, its clients holding keep-alive connections', { timeout: 30_000 }, async () => {
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const upstream = await startUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, chunks: [fixture('openai', 'text.json')], pause: { after: 0, until: held } }))
    const busy = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const idle = new http.Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const server = await serve({
        MODELGATE_STORAGE: 'memory',
        MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
        MODELGATE_LOG_LEVEL: 'info',
        MODELGATE_SHUTDOWN_GRACE_SECONDS: '120',
        OPENAI_API_KEY: 'sk-runner-openai-0123456789abcdef',
        MODELGATE_PROVIDER_OPENAI_BASE_URL: upstream.url,
      })
      const created = await fetch(`${server.url}/api/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'caller' }),
      })
      const { key } = (await created.json()) as { key: string }
      const call = (agent: http.Agent, method: string, path: string, body?: unknown) =>
        new Promise<{ status: number; text: string }>((resolve, reject) => {
          const request = http.request(`${server.url}/api/v1${path}`, { method, agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, (response) => {
            let text = ''
            response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
            response.on('end', () => resolve({ status: response.statusCode!, text }))
          })
          request.on('error', reject)
          request.end(body === undefined ? undefined : JSON.stringify(body))
        })
      // Each agent holds a kept-alive connection: one goes quiet, the other carries a request across the signal.
      expect((await call(idle, 'GET', '/key')).status).toBe(200)
      expect((await call(busy, 'GET', '/key')).status).toBe(200)
      const inFlight = call(busy, 'POST', '/responses', { model: 'openai/gpt-4.1', input: 'hi' })
      await vi.waitFor(() => expect(upstream.requests).toHaveLength(1))

      const exited = server.stop('SIGTERM')
      await vi.waitFor(() => expect(server.stderr()).toContain('"shutting down"'))
      release()
      const answered = await inFlight
      expect(answered.status).toBe(200)
      expect(JSON.parse(answered.text)).toMatchObject({ status: 'completed', model: 'openai/gpt-4.1' })
      expect(await exited).toBe(0)
      expect(server.stderr()).toContain('"stopped"')
    } finally {
      busy.destroy()
      idle.destroy()
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

  it('moves the embedded store of an earlier start into SQLite at its first start on the new default', async () => {
    const before = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, MODELGATE_STORAGE: 'file' })
    const created = await fetch(`${before.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'from-the-file-store' }),
    })
    expect(created.status).toBe(201)
    const { key } = (await created.json()) as { key: string }
    expect(await stopAndDrain(before)).toBe(0)

    const after = await serve({ MODELGATE_LOG_LEVEL: 'info' })
    expect((await get(`${after.url}/api/v1/key`, key)).status).toBe(200)
    const keys = (await (await get(`${after.url}/api/v1/keys`, OPERATOR_KEY)).json()) as { data: Array<{ name: string }> }
    expect(keys.data.map((entry) => entry.name)).toContain('from-the-file-store')
    // Nothing minted: the store's management key came along.
    expect(after.stdout()).not.toContain('mg-v1-')
    expect(await stopAndDrain(after)).toBe(0)
    const moved = after.stderr().split('\n').filter((line) => line.includes('moved the embedded store into the SQLite store'))
    expect(moved).toHaveLength(1)
    expect(JSON.parse(moved[0]!)).toMatchObject({ level: 'info', path: join(dataDir, 'modelgate.db'), backupDirectory: expect.stringContaining(join(dataDir, 'file-store-backup-')) })
  })

  it('lets a command share the SQLite store with a running gateway, which sees what it wrote', async () => {
    const server = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
    const result = await cli('keys', 'create', '--name', 'beside')
    expect(result.code, result.stderr).toBe(0)
    const keys = (await (await get(`${server.url}/api/v1/keys`, OPERATOR_KEY)).json()) as { data: Array<{ name: string }> }
    expect(keys.data.map((key) => key.name)).toContain('beside')
  })

  it('backs up the SQLite store while the gateway serves, to a copy another runner can serve from', async () => {
    const server = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
    const created = await fetch(`${server.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'in-the-backup' }),
    })
    const { key } = (await created.json()) as { key: string }
    const copy = join(dataDir, 'backups', 'copy.db')
    await mkdir(join(dataDir, 'backups'))
    const result = await cli('backup', copy)
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(`Copied the store at ${join(dataDir, 'modelgate.db')} to ${copy}`)
    expect((await cli('backup', copy)).stderr).toMatch(/^modelgate: cannot back up the store at .+ to .+: EEXIST/)
    const fromCopy = await serve({ MODELGATE_STORAGE: `sqlite:${copy}` })
    expect((await get(`${fromCopy.url}/api/v1/key`, key)).status).toBe(200)
    const refused = await runToEnd('node', [CLI, 'backup', copy], { env: { MODELGATE_STORAGE: 'memory' } })
    expect(refused.stderr).toContain('modelgate: backup copies the SQLite store; back up the memory store with its own tools')
  })

  it('refuses a second process on the embedded file store with a clear message', async () => {
    await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, MODELGATE_STORAGE: 'file' })
    const result = await runToEnd('node', [CLI, 'keys', 'create'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_STORAGE: 'file' } })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/is in use by process (\d+)\. Stop that gateway first \(Ctrl-C in its terminal, or kill \1\), then run this command again\./)
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

  describe('first run', () => {
    const MINTED = /^ {4}(mg-v1-[0-9a-f]{64})$/m

    it('mints a management key on an empty store, prints it once on stdout with a working curl, and never logs it', async () => {
      const first = await serve()
      await vi.waitFor(() => expect(first.stdout()).toContain('Lost it?'))
      const key = MINTED.exec(first.stdout())![1]!
      expect(first.stderr()).not.toContain(key)
      expect(first.stdout()).toContain(`curl -X POST ${first.url}/api/v1/keys \\`)
      expect(first.stdout()).toContain(`-H 'Authorization: Bearer ${key}'`)
      // What the printed curl does: create a regular key.
      const created = await fetch(`${first.url}/api/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'my-app' }),
      })
      expect(created.status).toBe(201)
      expect(((await created.json()) as { data: { kind: string } }).data.kind).toBe('regular')
      expect(await first.stop()).toBe(0)

      // The next start finds the key and mints nothing.
      const second = await serve()
      expect((await get(`${second.url}/api/v1/keys`, key)).status).toBe(200)
      expect(await stopAndDrain(second)).toBe(0)
      expect(second.stdout()).not.toContain('mg-v1-')
    })

    it('in development mode says what production still needs, and lists the store and providers', async () => {
      const dev = await serve({ MODELGATE_DEV: '1', MODELGATE_LOG_LEVEL: 'info', OPENAI_API_KEY: 'sk-test-shared-0123456789' })
      await stopAndDrain(dev)
      const entries = dev.stderr().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(entries.find((entry) => entry.message === 'modelgate listening')).toMatchObject({
        url: `${dev.url}/api/v1`,
        storage: 'sqlite',
        path: join(dataDir, 'modelgate.db'),
        providers: ['openai'],
        mode: 'development',
      })
      const gaps = entries.filter((entry) => String(entry.message).startsWith('not set up for production: ')).map((entry) => entry.message)
      // The SQLite store serves every process of its machine: no store is missing.
      expect(gaps).toEqual([
        expect.stringContaining('encryption keys: set MODELGATE_ENCRYPTION_KEYS'),
        expect.stringContaining('a management key of your own: set MODELGATE_MANAGEMENT_KEY'),
      ])
      expect(dev.stderr()).not.toContain('sk-test-shared-0123456789')
    })

    it('of several processes starting together on one SQLite file, exactly one mints a key, and all serve it', async () => {
      const processes = await Promise.all([serve(), serve(), serve()])
      await vi.waitFor(() => expect(processes.some((process) => process.stdout().includes('Lost it?'))).toBe(true))
      const key = processes.map((process) => MINTED.exec(process.stdout())?.[1]).find(Boolean)!
      for (const process of processes) expect((await get(`${process.url}/api/v1/keys`, key)).status).toBe(200)
      await Promise.all(processes.map((process) => stopAndDrain(process)))
      expect(processes.map((process) => MINTED.exec(process.stdout())?.[1]).filter(Boolean)).toEqual([key])
    })

    it('of several processes starting together on one shared store, exactly one mints a key', async () => {
      await requireServer(6379)
      const prefix = `${uniqueNamespace('firstrun')}:`
      try {
        const env = { MODELGATE_STORAGE: REDIS_URL, MODELGATE_REDIS_PREFIX: prefix }
        const processes = await Promise.all([serve(env), serve(env), serve(env)])
        await Promise.all(processes.map((process) => stopAndDrain(process)))
        const minted = processes.map((process) => MINTED.exec(process.stdout())?.[1]).filter(Boolean)
        expect(minted).toHaveLength(1)
      } finally {
        await dropRedisPrefix(prefix)
      }
    })
  })

  describe('the CLI', () => {
    it('prints help with every environment variable and examples, and the version', async () => {
      const help = await cli('--help')
      expect(help.code).toBe(0)
      for (const { name } of [...RUNNER_VARIABLES, ...providerKeyVariables()]) expect(help.stdout).toMatch(new RegExp(`^  ${name}\\s`, 'm'))
      expect(help.stdout).toContain('MODELGATE_PROVIDER_<ID>_API_KEY')
      expect(help.stdout).toMatch(/Examples:\n/)
      expect(help.stdout).toContain('keys revoke <hash|prefix>')
      const version = await cli('--version')
      expect(version.stdout.trim()).toBe(manifest.version)
      expect((await cli('-v')).stdout.trim()).toBe(manifest.version)
    })

    it('lists keys without raw values, and revokes one by a hash prefix', async () => {
      const management = (await cli('keys', 'create', '--management', '--name', 'ops')).stdout.trim()
      const regular = (await cli('keys', 'create', '--name', 'backend')).stdout.trim()
      const regularHash = createHash('sha256').update(regular).digest('hex')

      const listed = await cli('keys', 'list')
      expect(listed.code).toBe(0)
      const lines = listed.stdout.trim().split('\n')
      expect(lines[0]).toMatch(/^hash\s+kind\s+disabled\s+label\s+name$/)
      expect(lines.slice(1)).toEqual([
        expect.stringMatching(/^[0-9a-f]{16}\s+management\s+no\s+mg-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{4}\s+ops$/),
        expect.stringMatching(new RegExp(`^${regularHash.slice(0, 16)}\\s+regular\\s+no\\s+\\S+\\s+backend$`)),
      ])
      expect(listed.stdout).not.toContain(management)
      expect(listed.stdout).not.toContain(regular)

      const revoked = await cli('keys', 'revoke', regularHash.slice(0, 10))
      expect(revoked.code).toBe(0)
      expect(revoked.stdout).toContain(`Disabled regular key "backend" (hash ${regularHash})`)
      expect((await cli('keys', 'list')).stdout).not.toContain('backend')
      expect((await cli('keys', 'list', '--all')).stdout).toMatch(/regular\s+yes\s+\S+\s+backend/)

      const server = await serve()
      expect((await get(`${server.url}/api/v1/workspaces/default`, regular)).status).toBe(401)
      expect((await get(`${server.url}/api/v1/workspaces/default`, management)).status).toBe(200)
    })

    it('grants credits, keeps each grant, and serves them at GET /credits; enforced with MODELGATE_ENFORCE_CREDITS=1', async () => {
      const management = (await cli('keys', 'create', '--management', '--name', 'ops')).stdout.trim()
      const first = await cli('credits', 'grant', '25', '--note', 'March invoice')
      expect(first.code).toBe(0)
      expect(first.stdout).toBe('Granted $25.00 (grant 1). The account now has $25.00 granted, $0.00 used.\n')
      // `--` ends the options, so a negative amount is not read as one.
      const correction = await cli('credits', 'grant', '--note', 'correction', '--', '-2.5')
      expect(correction.stdout).toBe('Granted -$2.50 (grant 2). The account now has $22.50 granted, $0.00 used.\n')
      const shown = await cli('credits', 'show')
      expect(shown.code).toBe(0)
      const lines = shown.stdout.trim().split('\n')
      expect(lines[0]).toBe('Credits: $22.50 granted, $0.00 used')
      expect(lines[1]).toMatch(/^grant\s+amount\s+by\s+created_at\s+note$/)
      expect(lines.slice(2)).toEqual([
        expect.stringMatching(/^1\s+\$25\.00\s+cli\s+\S+Z\s+March invoice$/),
        expect.stringMatching(/^2\s+-\$2\.50\s+cli\s+\S+Z\s+correction$/),
      ])
      for (const bad of [['credits', 'grant'], ['credits', 'grant', 'ten'], ['credits', 'grant', '0']]) {
        const refused = await cli(...bad)
        expect(refused.code).toBe(1)
        expect(refused.stderr).toMatch(/credits grant needs an amount in USD|input\.amount: must not be 0/)
      }
      expect((await cli('--help')).stdout).toContain('credits grant <usd>')

      expect((await cli('accounts', 'create', '--slug', 'acme')).code).toBe(0)
      const acmeKey = (await cli('keys', 'create', '--account', 'acme')).stdout.trim()

      // OpenAI's endpoint points at a closed loopback port: a request let through would fail with 502, not 402.
      const server = await serve({ MODELGATE_ENFORCE_CREDITS: '1', OPENAI_API_KEY: 'sk-test-0123456789abcdef', MODELGATE_PROVIDER_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })
      const credits = await get(`${server.url}/api/v1/credits`, management)
      expect(await credits.json()).toEqual({ data: { total_credits: 22.5, total_usage: 0 } })
      const refused = await fetch(`${server.url}/api/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acmeKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'openai/gpt-4.1-mini', input: 'Hi', max_output_tokens: 16 }),
      })
      expect(refused.status).toBe(402)
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/^Insufficient credits: the account has \$0\.00 left of \$0\.00 granted/)
    })

    it('explains a prefix that is too short or matches nothing', async () => {
      const short = await cli('keys', 'revoke', 'abc')
      expect(short.code).toBe(1)
      expect(short.stderr).toContain('A key is named by its hash or a prefix of it: 8 to 64 hex characters')
      const missing = await cli('keys', 'revoke')
      expect(missing.stderr).toContain("keys revoke needs the key's hash or a prefix of it")
    })
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
      expect(refused.status).toBe(403)
      expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('BYOK is disabled on this gateway')
      expect(keyless.stderr()).not.toContain('"level":"error"')
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

    it('refuses to start when stored credentials need an encryption key that is not configured, naming its id', async () => {
      const first = await serve({ MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY, MODELGATE_ENCRYPTION_KEYS: KEY_A })
      expect((await postByok(first.url)).status).toBe(200)
      await first.stop()
      const keyIdOf = (key: string) => createHash('sha256').update(`modelgate-master-key:${Buffer.from(key, key.length === 64 ? 'hex' : 'base64').toString('base64')}`).digest('hex').slice(0, 16)
      const result = await runToEnd('node', [CLI, 'serve'], {
        env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_ENCRYPTION_KEYS: KEY_B },
      })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(
        `modelgate: stored BYOK credentials were sealed with encryption key id ${keyIdOf(KEY_A)} (1 credential(s)), which is not configured (the configured keys have ids ${keyIdOf(KEY_B)}).`,
      )
      expect(result.stderr).toContain('Add that key to MODELGATE_ENCRYPTION_KEYS')
      expect(result.stderr).not.toContain(KEY_A)
      expect(result.stderr).not.toContain(KEY_B)
      // With both keys it starts (and the old one can then be retired by reencrypt).
      const both = await serve({ MODELGATE_ENCRYPTION_KEYS: `${KEY_B},${KEY_A}` })
      expect((await fetch(`${both.url}/api/v1/health/ready`)).status).toBe(200)
    })

    it('rejects a malformed encryption key at start', async () => {
      const result = await runToEnd('node', [CLI, 'serve'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_ENCRYPTION_KEYS: 'too-short' } })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain('encryption key 1 must be 32 bytes, as 64 hex characters or base64')
    })
  })
})
