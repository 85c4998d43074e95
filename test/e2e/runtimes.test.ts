import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSseEvents } from '../helpers/responses'
import { assertValidEventSequence } from '../helpers/stream-events'
import { fixture, jsonFixture, sseFixture, startUpstream, type Upstream } from '../helpers/upstream'

/**
 * Streamed and whole `/responses` answers on Bun's and Deno's own servers, which read a Response's internals:
 * the gateway hands them plain Responses, and a streamed one is fed by the same producer the Node bridge uses.
 */
const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url))
const SCRIPT = 'test/e2e/fixtures/stream-server.mjs'
const RUNTIMES = [
  { name: 'bun', command: 'node_modules/.bin/bun', args: [SCRIPT] },
  {
    name: 'deno',
    command: 'node_modules/.bin/deno',
    args: ['run', '--no-remote', '--config', 'examples/deno/deno.json', '--allow-net', '--allow-env', SCRIPT],
  },
]

/** The fixture's events up to and including its first text delta. */
const throughFirstDelta = (sse: Buffer): Buffer => sse.subarray(0, sse.indexOf('\n\n', sse.indexOf('event: response.output_text.delta')) + 2)

describe.each(RUNTIMES)('a gateway on $name', (runtime) => {
  let upstream: Upstream
  let child: ChildProcess
  let target: { url: string; key: string }

  beforeAll(async () => {
    upstream = await startUpstream()
    child = spawn(runtime.command, runtime.args, {
      cwd: repositoryRoot,
      env: { ...process.env, UPSTREAM: upstream.url, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    target = await new Promise((resolve, reject) => {
      let stdout = ''
      const timer = setTimeout(() => reject(new Error(`${runtime.name} did not start; stderr:\n${stderr}`)), 30_000)
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk
        const line = stdout.split('\n').find((candidate) => candidate.startsWith('{'))
        if (!line) return
        clearTimeout(timer)
        resolve(JSON.parse(line) as { url: string; key: string })
      })
      child.once('exit', (code) => reject(new Error(`${runtime.name} exited with ${code}; stderr:\n${stderr}`)))
    })
  }, 40_000)

  afterAll(async () => {
    child?.kill('SIGKILL')
    await upstream?.close()
  })

  const post = (body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${target.url}/api/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4.1', input: 'hi', ...body }),
      ...(signal ? { signal } : {}),
    })

  it('answers whole', async () => {
    upstream.setHandler(() => jsonFixture('openai', 'text.json'))
    const response = await post({})

    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    const body = (await response.json()) as { status: string; output: Array<{ content: Array<{ text: string }> }> }
    expect(body.status).toBe('completed')
    expect(body.output[0]!.content[0]!.text).toContain('Paris')
  })

  it('streams a valid event sequence that ends with [DONE]', async () => {
    upstream.setHandler(() => sseFixture('openai', 'text.sse', 200))
    const response = await post({ stream: true })

    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const { events } = await readSseEvents(response)
    expect(events.at(-1)!.data).toBe('[DONE]')
    const payloads = events.slice(0, -1).map((event) => event.data)
    expect(payloads.at(-1).type).toBe('response.completed')
    expect(payloads.map((event: { sequence_number: number }) => event.sequence_number)).toEqual(payloads.map((_: unknown, index: number) => index))
    assertValidEventSequence(payloads)
  })

  it('aborts the upstream when the client goes away mid-stream', async () => {
    upstream.setHandler(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [throughFirstDelta(fixture('openai', 'text.sse')), 'x'],
      pause: { after: 1, until: new Promise(() => {}) },
    }))
    const aborted = upstream.nextClientAbort()
    const controller = new AbortController()

    const response = await post({ stream: true }, controller.signal)
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()

    await aborted
  })
})
