/**
 * Server processes of the bench: each server runs alone in a child process (plain `node`, no tsx
 * loader) and answers `stats` over IPC with its CPU time and peak RSS, so every figure is that
 * process's own.
 */

import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const STARTUP_TIMEOUT_MS = 30_000
const STATS_TIMEOUT_MS = 5_000

export interface ProcessStats {
  cpuMicros: number
  rssBytes: number
  maxRssBytes: number
  /** After a full garbage collection when asked with `shouldCollect`. */
  heapUsedBytes: number
  /** Storage driver calls so far (modelgate only). */
  storeCalls?: number
  /** Of those, the usage ledger's writes (`createMany` on its collection), and the records they carried. */
  ledgerWrites?: number
  ledgerRecords?: number
}

export interface ServerProcess {
  name: string
  pid: number
  /** What the server reported when ready (`url`, and `key` for the gateway). */
  ready: Record<string, string>
  /** `shouldCollect` runs a full garbage collection first (slow; for the end of a run). */
  stats(shouldCollect?: boolean): Promise<ProcessStats>
  /** Asks the process to exit cleanly (so `--cpu-prof` writes its profile) and waits for it. */
  stop(): Promise<void>
}

const children = new Set<ChildProcess>()
let nextStatsId = 0

/** Counts a child the bench started in another way (the runner, bench/runner.ts) among those `killAll` kills. */
export const trackChild = (child: ChildProcess) => {
  children.add(child)
  child.once('exit', () => children.delete(child))
}

/** Kills whatever is still running; for error paths and the global time limit. */
export const killAll = () => {
  for (const child of children) child.kill('SIGKILL')
}

const waitFor = <T>(child: ChildProcess, what: string, timeoutMs: number, pick: (message: any) => T | undefined): Promise<T> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`${what}: no answer within ${timeoutMs} ms`)), timeoutMs)
    const onMessage = (message: unknown) => {
      const value = pick(message)
      if (value !== undefined) finish(undefined, value)
    }
    const onExit = (code: number | null) => finish(new Error(`${what}: the process exited (code ${code})`))
    const finish = (error?: Error, value?: T) => {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
      if (error) reject(error)
      else resolve(value as T)
    }
    child.on('message', onMessage)
    child.on('exit', onExit)
  })

/** Starts `bench/<script>` and waits until it listens. */
export const startServer = async (
  name: string,
  script: string,
  env: Record<string, string>,
  execArgv: string[] = [],
): Promise<ServerProcess> => {
  // `execArgv` is set explicitly: the default would pass this process's `--import tsx` on.
  // `--expose-gc` only lets the end-of-run report collect before reading the live heap.
  const child = fork(fileURLToPath(new URL(script, import.meta.url)), [], {
    env: { ...process.env, ...env },
    execArgv: ['--expose-gc', ...execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  trackChild(child)
  const ready = await waitFor(child, `${name} start-up`, STARTUP_TIMEOUT_MS, (message) =>
    message?.type === 'ready' ? (message as Record<string, string>) : undefined,
  )
  return {
    name,
    pid: child.pid!,
    ready,
    stats: (shouldCollect = false) => {
      const id = nextStatsId++
      const answer = waitFor(child, `${name} stats`, STATS_TIMEOUT_MS, (message) =>
        message?.type === 'stats' && message.id === id ? (message as ProcessStats) : undefined,
      )
      child.send({ type: 'stats', id, shouldCollect })
      return answer
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.send({ type: 'exit' })
      const timer = setTimeout(() => child.kill('SIGKILL'), STATS_TIMEOUT_MS)
      await exited
      clearTimeout(timer)
    },
  }
}
