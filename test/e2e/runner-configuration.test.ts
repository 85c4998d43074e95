/**
 * The runner's configuration mistakes say what is missing and how to fix it, and a provider defined only in
 * the environment can serve. Each case runs the built CLI as a real process.
 */

import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runToEnd, startListening, stopAndDrain, type RunningProcess } from '../helpers/process'
import { jsonFixture, startUpstream, type Upstream } from '../helpers/upstream'

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'dist/cli.js')
const OPERATOR_KEY = 'operator-key-0123456789abcdef'

/** A loopback port nothing listens on. */
const closedPort = () =>
  new Promise<number>((done) => {
    const server = createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => done(port))
    })
  })

describe('runner configuration', () => {
  let dataDir: string
  const running: RunningProcess[] = []
  const upstreams: Upstream[] = []

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'modelgate-config-'))
  })
  afterEach(async () => {
    await Promise.all(running.splice(0).map((process) => process.stop('SIGKILL')))
    await Promise.all(upstreams.splice(0).map((upstream) => upstream.close()))
    await rm(dataDir, { recursive: true, force: true })
  })

  const start = (env: Record<string, string>) => runToEnd('node', [CLI, 'serve'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', ...env } })

  it('names an unknown setting in the config file as such', async () => {
    const configPath = join(dataDir, 'modelgate.json')
    await writeFile(configPath, JSON.stringify({ prot: 8080 }))
    const result = await start({ MODELGATE_CONFIG: configPath })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('modelgate: invalid configuration: prot: unknown setting')
    expect(result.stderr).not.toContain('Expected never')
  })

  it("serves the operator's dashboard only with MODELGATE_DASHBOARD=1, at MODELGATE_DASHBOARD_PATH when given", async () => {
    const off = await startListening('node', [CLI, 'serve'], { env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_STORAGE: 'memory' } })
    running.push(off)
    expect((await fetch(`${off.url}/dashboard`)).status).toBe(404)
    const on = await startListening('node', [CLI, 'serve'], {
      env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_STORAGE: 'memory', MODELGATE_DASHBOARD: '1', MODELGATE_DASHBOARD_PATH: '/ops', MODELGATE_LOG_LEVEL: 'info' },
    })
    running.push(on)
    const page = await fetch(`${on.url}/ops`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'none'; script-src 'sha256-/)
    expect(await page.text()).toContain('<meta name="modelgate-api" content="/api/v1">')
    await expect.poll(() => on.stderr()).toContain(`"dashboard":"${on.url}/ops"`)
    const refused = await start({ MODELGATE_DASHBOARD_PATH: '/ops' })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('modelgate: invalid configuration: dashboardPath: has no effect unless dashboard is on (MODELGATE_DASHBOARD=1)')
  })

  it('refuses to start when a model entry names an unknown provider', async () => {
    const configPath = join(dataDir, 'modelgate.json')
    const models = [{ slug: 'acme/large', name: 'Acme', endpoints: [{ provider: 'acme', model: 'large', contextLength: 8192, pricing: { prompt: 0, completion: 0 } }] }]
    await writeFile(configPath, JSON.stringify({ models }))
    const result = await start({ MODELGATE_CONFIG: configPath })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('modelgate: model "acme/large" names provider "acme", which is neither built in nor configured in providers')
  })

  it('serves a provider defined only in the environment, with the models it lists', async () => {
    const upstream = await startUpstream(() => jsonFixture('openai-chat', 'text.json'))
    upstreams.push(upstream)
    const server = await startListening('node', [CLI, 'serve'], {
      env: {
        MODELGATE_DATA_DIR: dataDir,
        MODELGATE_PORT: '0',
        MODELGATE_LOG_LEVEL: 'info',
        MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
        MODELGATE_PROVIDER_MY_VLLM_API: 'openai-chat',
        MODELGATE_PROVIDER_MY_VLLM_BASE_URL: upstream.url,
        MODELGATE_PROVIDER_MY_VLLM_KEYLESS: '1',
        MODELGATE_PROVIDER_MY_VLLM_MODELS: 'meta/llama-local=meta-llama/Llama-3.1-8B-Instruct',
      },
    })
    running.push(server)
    const created = await fetch(`${server.url}/api/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'app' }),
    })
    const { key } = (await created.json()) as { key: string }
    const response = await fetch(`${server.url}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'meta/llama-local', input: 'hi' }),
    })
    const body = (await response.json()) as { status: string; usage: { cost: number } }
    expect(response.status, JSON.stringify(body)).toBe(200)
    expect(body.status).toBe('completed')
    expect(body.usage.cost).toBe(0)
    expect(upstream.requests.map((request) => request.json.model)).toEqual(['meta-llama/Llama-3.1-8B-Instruct'])
    expect(server.stderr()).toContain('"providers":["my-vllm"]')
    expect(server.stderr()).not.toContain('no model uses it')
  })

  it('warns at start about a provider that no model uses', async () => {
    const server = await startListening('node', [CLI, 'serve'], {
      env: {
        MODELGATE_DATA_DIR: dataDir,
        MODELGATE_PORT: '0',
        MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY,
        MODELGATE_PROVIDER_MY_VLLM_API: 'openai-chat',
        MODELGATE_PROVIDER_MY_VLLM_BASE_URL: 'http://127.0.0.1:9/v1',
        MODELGATE_PROVIDER_MY_VLLM_KEYLESS: '1',
      },
    })
    running.push(server)
    await stopAndDrain(server)
    expect(server.stderr()).toContain(
      'provider \\"my-vllm\\" is configured but no model uses it: list its models with MODELGATE_PROVIDER_MY_VLLM_MODELS=<author>/<name>=<upstream model id>',
    )
  })

  it('names the Redis URL (password masked) and the cause when the store cannot be reached at start', async () => {
    const port = await closedPort()
    const result = await start({ MODELGATE_STORAGE: `redis://:hunter2-secret@127.0.0.1:${port}`, MODELGATE_MANAGEMENT_KEY: OPERATOR_KEY })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`modelgate: cannot reach the store at redis://***@127.0.0.1:${port}: Redis connection failed: connect ECONNREFUSED 127.0.0.1:${port}`)
    expect(result.stderr).not.toContain('hunter2')
  })

  it('says how to install ioredis when it is missing', async () => {
    // The built package, installed without its optional peer ioredis.
    const installed = await mkdtemp(join(tmpdir(), 'modelgate-no-ioredis-'))
    try {
      await cp(join(ROOT, 'dist'), join(installed, 'dist'), { recursive: true })
      await writeFile(join(installed, 'package.json'), JSON.stringify({ name: 'modelgate', type: 'module', version: '0.0.0' }))
      await mkdir(join(installed, 'node_modules'))
      // Every dependency the package declares, and none of its optional peers.
      const { dependencies } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
      for (const dependency of Object.keys(dependencies)) {
        // A scoped package (`@mozilla/readability`) sits in its scope's folder.
        await mkdir(dirname(join(installed, 'node_modules', dependency)), { recursive: true })
        await symlink(join(ROOT, 'node_modules', dependency), join(installed, 'node_modules', dependency))
      }
      const result = await runToEnd('node', [join(installed, 'dist/cli.js'), 'serve'], {
        env: { MODELGATE_STORAGE: 'redis://127.0.0.1:6379', MODELGATE_PORT: '0' },
      })
      expect(result.code).toBe(1)
      expect(result.stderr.trim()).toBe('modelgate: redis:// storage needs the "ioredis" package; install it with npm install ioredis')
    } finally {
      await rm(installed, { recursive: true, force: true })
    }
  })
})
