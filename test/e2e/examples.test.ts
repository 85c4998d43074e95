import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url))
const LISTENING_LINE = /^modelgate listening on (http:\/\/\S+)$/m
const STARTUP_LIMIT_MS = 30_000

interface Example {
  name: string
  command: string
  args: string[]
  /** Where the example mounts the gateway below its printed origin. */
  mountPath: string
}

// Each example runs the way its README says, from the repository root, against the built dist/.
const examples: Example[] = [
  { name: 'node-http', command: process.execPath, args: ['examples/node-http/server.mjs'], mountPath: '' },
  { name: 'express', command: process.execPath, args: ['examples/express/server.mjs'], mountPath: '/ai' },
  { name: 'bun', command: 'node_modules/.bin/bun', args: ['examples/bun/server.ts'], mountPath: '' },
  {
    name: 'deno',
    command: 'node_modules/.bin/deno',
    args: ['run', '--no-remote', '--config', 'examples/deno/deno.json', '--allow-net', '--allow-env', 'examples/deno/server.ts'],
    mountPath: '',
  },
]

interface RunningExample {
  child: ChildProcess
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  stdout: () => string
  stderr: () => string
}

const running: RunningExample[] = []

const start = (example: Example, managementKey: string): RunningExample => {
  const child = spawn(example.command, example.args, {
    cwd: repositoryRoot,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      MODELGATE_MANAGEMENT_KEY: managementKey,
      DENO_NO_UPDATE_CHECK: '1',
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
    child.once('error', () => resolve({ code: null, signal: null }))
  })
  const handle = { child, exited, stdout: () => stdout, stderr: () => stderr }
  running.push(handle)
  return handle
}

/** Resolves the printed origin once the listening line is on stdout; fails with stderr if the child dies or stalls. */
const waitForListening = (example: RunningExample, name: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const check = () => {
      const match = LISTENING_LINE.exec(example.stdout())
      if (!match?.[1]) return
      cleanup()
      resolve(match[1])
    }
    const timer = setTimeout(() => {
      cleanup()
      reject(new Error(`${name} printed no listening line within ${STARTUP_LIMIT_MS} ms; stderr:\n${example.stderr()}`))
    }, STARTUP_LIMIT_MS)
    const onExit = (code: number | null) => {
      cleanup()
      reject(new Error(`${name} exited with code ${code} before listening; stderr:\n${example.stderr()}`))
    }
    const cleanup = () => {
      clearTimeout(timer)
      example.child.stdout?.off('data', check)
      example.child.off('exit', onExit)
    }
    example.child.stdout?.on('data', check)
    example.child.once('exit', onExit)
    check()
  })

beforeAll(() => {
  if (!existsSync(new URL('../../dist/index.js', import.meta.url))) {
    throw new Error('dist/ is missing: the examples import the built package, so run `npm run build` first')
  }
})

afterAll(async () => {
  for (const example of running) {
    if (example.child.exitCode === null && example.child.signalCode === null) example.child.kill('SIGKILL')
  }
  await Promise.all(running.map((example) => example.exited))
})

describe.each(examples)('the $name example', (example) => {
  const managementKey = `mg-v1-${randomBytes(32).toString('hex')}`
  let child: RunningExample
  let base: string

  beforeAll(async () => {
    child = start(example, managementKey)
    const origin = await waitForListening(child, example.name)
    base = `${origin}${example.mountPath}`
  })

  it('serves the default workspace to the management key', async () => {
    const response = await fetch(`${base}/api/v1/workspaces/default`, {
      headers: { authorization: `Bearer ${managementKey}` },
    })

    expect(response.status).toBe(200)
    expect(response.headers.get('x-request-id')).toBeTruthy()
    const body = (await response.json()) as { data: { slug: string } }
    expect(body).toEqual({ data: expect.objectContaining({ slug: 'default' }) })
  })

  it('answers 401 without credentials', async () => {
    const response = await fetch(`${base}/api/v1/workspaces/default`)

    expect(response.status).toBe(401)
    expect(await response.json()).toEqual({ error: { code: 401, message: expect.any(String) } })
  })

  it('answers 404 JSON with a request id for an unknown path', async () => {
    const response = await fetch(`${base}/api/v1/no-such-resource`)

    expect(response.status).toBe(404)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(response.headers.get('x-request-id')).toBeTruthy()
    expect(await response.json()).toEqual({ error: { code: 404, message: expect.any(String) } })
  })

  it('exits cleanly on SIGTERM after printing exactly one line and never the key', async () => {
    child.child.kill('SIGTERM')
    const { code, signal } = await child.exited

    expect({ code, signal, stderr: child.stderr() }).toEqual({ code: 0, signal: null, stderr: expect.any(String) })
    expect(child.stdout()).toBe(`${LISTENING_LINE.exec(child.stdout())?.[0]}\n`)
    expect(child.stdout() + child.stderr()).not.toContain(managementKey)
  })
})
