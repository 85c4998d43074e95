import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { resolve } from 'node:path'

export interface RunningProcess {
  child: ChildProcessWithoutNullStreams
  /** Base URL parsed from the `modelgate listening on <url>` line. */
  url: string
  stdout(): string
  stderr(): string
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

const LISTENING = /modelgate listening on (http:\/\/\S+)/

/** Starts a process and waits (bounded) for its listening line; rejects with its output if it dies first. */
export const startListening = (command: string, args: string[], options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}) =>
  new Promise<RunningProcess>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }) as ChildProcessWithoutNullStreams
    let stdout = ''
    let stderr = ''
    const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`timed out waiting for ${command} to listen\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    }, options.timeoutMs ?? 30_000)
    const running: RunningProcess = {
      child,
      url: '',
      stdout: () => stdout,
      stderr: () => stderr,
      stop: (signal = 'SIGTERM') => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal)
        return exited
      },
    }
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = LISTENING.exec(stdout)
      if (match && !running.url) {
        clearTimeout(timer)
        running.url = match[1]!
        resolve(running)
      }
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (!running.url) reject(new Error(`${command} exited with ${code} before listening\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    })
  })

/** Runs a command to completion and returns its exit code and output. */
export const runToEnd = (command: string, args: string[], options: { env?: Record<string, string>; cwd?: string } = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })

/** Stops a process and waits until everything it wrote has been read; resolves with its exit code. */
export const stopAndDrain = async (process: RunningProcess, signal?: NodeJS.Signals) => {
  const code = await process.stop(signal)
  const streams = [process.child.stdout, process.child.stderr]
  await Promise.all(streams.map((stream) => (stream.closed ? undefined : once(stream, 'close'))))
  return code
}

const CLI = resolve(__dirname, '../../dist/cli.js')

/** Starts the built runner (`modelgate serve`; run `npm run build` first) on a free loopback port. */
export const startRunner = (env: Record<string, string>) => startListening('node', [CLI, 'serve'], { env: { MODELGATE_PORT: '0', ...env } })

/** Starts `count` runners at once; when one fails to start, stops the others and rejects with its output. */
export const startRunners = async (count: number, env: Record<string, string>): Promise<RunningProcess[]> => {
  const started = await Promise.allSettled(Array.from({ length: count }, () => startRunner(env)))
  const failure = started.find((result): result is PromiseRejectedResult => result.status === 'rejected')
  if (!failure) return started.map((result) => (result as PromiseFulfilledResult<RunningProcess>).value)
  await Promise.all(started.map((result) => (result.status === 'fulfilled' ? result.value.stop('SIGKILL') : undefined)))
  throw failure.reason
}
