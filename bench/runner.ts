/**
 * The runner as users run it: `cli.js serve` of the measured build, in a child process of its own, with its default
 * store in a fresh temporary data directory (`BENCH_STORE=redis` or `postgres`: the local server, in a namespace of
 * its own), the usage ledger on, the default log level (its log goes to a file in that directory), and the bench's
 * providers (bench/providers.mjs) from a config file. Nothing in it answers the bench's `stats` message, so its
 * CPU time and memory are read from /proc, over the primary and its workers with `--workers`.
 */

import { execFileSync, spawn } from 'node:child_process'
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { trackChild, type ProcessStats, type ServerProcess } from './processes'
import { BENCH_MODELS, benchProviders } from './providers.mjs'
import type { Skipped, Target } from './targets'
import { modelgateTarget } from './targets'

const STARTUP_TIMEOUT_MS = 45_000
const STOP_TIMEOUT_MS = 30_000
/** The runner's own management key: set, so it mints none and prints no banner. */
const MANAGEMENT_KEY = 'bench-management-key-0123456789abcdef'
/** What the runner says when several workers need a store it cannot share (src/cli/cluster.ts). */
const STORE_NOT_SHARED = 'needs a store several processes can share'
/** Loopback only, as bench/gateway.mjs. */
const REDIS_URL = 'redis://127.0.0.1:6379'
const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

/** Whether this system can say how much CPU and memory another process used. */
export const canReadProcesses = () => existsSync('/proc/self/stat') && existsSync('/proc/self/status')

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`; 100 on every Linux Node supports). */
const clockTicks = (() => {
  let ticks: number | undefined
  return () => {
    if (ticks === undefined) {
      try {
        ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
      } catch {
        ticks = 100
      }
    }
    return ticks
  }
})()

/** utime, stime, cutime and cstime of /proc/<pid>/stat (fields 14 to 17), in ticks; after the name, which may hold spaces. */
const cpuTicks = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // fields[0] is field 3 (state): field n is fields[n - 3].
  const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((index) => Number(fields[index]))
  return { own: utime! + stime!, reapedChildren: cutime! + cstime! }
}

const statusKilobytes = (pid: number, field: 'VmRSS' | 'VmHWM') => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN)

/** The processes `pid` started (cluster forks from the main thread, which /proc lists them under). */
const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/**
 * The CPU and memory of the runner's processes: the primary and its live workers. A worker that exited is counted
 * in its primary's reaped-children time, so the total never steps back.
 */
const treeStats = (pid: number): ProcessStats => {
  const workers = childrenOf(pid).filter((child) => existsSync(`/proc/${child}/stat`))
  const primary = cpuTicks(pid)
  let ticks = primary.own + primary.reapedChildren
  let rssKb = statusKilobytes(pid, 'VmRSS')
  let maxRssKb = statusKilobytes(pid, 'VmHWM')
  for (const worker of workers) {
    try {
      ticks += cpuTicks(worker).own
      rssKb += statusKilobytes(worker, 'VmRSS')
      maxRssKb += statusKilobytes(worker, 'VmHWM')
    } catch {
      // Gone between the listing and the read: its time is in the primary's reaped-children time once reaped.
    }
  }
  return { cpuMicros: (ticks * 1_000_000) / clockTicks(), rssBytes: rssKb * 1024, maxRssBytes: maxRssKb * 1024, heapUsedBytes: Number.NaN }
}

/** The runner's store: its default, or the local server `BENCH_STORE` names, in a namespace dropped at the end. */
const storeSettings = (store: string) => {
  const namespace = `modelgate_bench_runner_${process.pid}_${Date.now()}`
  if (store === 'redis') {
    const prefix = `modelgate-bench:${namespace}:`
    const cleanUp = async () => {
      const { default: Redis } = await import('ioredis')
      const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
      for await (const keys of client.scanStream({ match: `${prefix}*`, count: 1000 })) if (keys.length > 0) await client.unlink(...keys)
      await client.quit()
    }
    return { env: { MODELGATE_STORAGE: REDIS_URL, MODELGATE_REDIS_PREFIX: prefix }, cleanUp }
  }
  if (store === 'postgres') {
    const cleanUp = async () => {
      const { default: postgres } = await import('postgres')
      const admin = postgres(POSTGRES_URL, { max: 1, onnotice: () => {} })
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${namespace}" CASCADE`)
      await admin.end({ timeout: 5 })
    }
    return { env: { MODELGATE_STORAGE: POSTGRES_URL, MODELGATE_SQL_SCHEMA: namespace }, cleanUp }
  }
  // The embedded file store, the default before SQLite, in the run's data directory.
  if (store === 'file') return { env: { MODELGATE_STORAGE: 'file' }, cleanUp: async () => {} }
  return { env: {}, cleanUp: async () => {} }
}

export interface RunnerColumn {
  label: string
  /** `--workers`; 1 runs it as shipped, in one process. */
  workers: number
  onlyIn?: Target['onlyIn']
  /** Node flags before `cli.js` (BENCH_PROFILE's `--cpu-prof`). */
  execArgv?: string[]
}

/**
 * Starts the runner and creates a regular key over its API. A runner that refuses to start `--workers` on its store
 * is a column the run skips, with the runner's own words; any other failure stops the run.
 */
export const startRunner = async (upstreamUrl: string, buildDir: string, store: string, column: RunnerColumn): Promise<Target | Skipped> => {
  const dataDir = await mkdtemp(join(tmpdir(), 'modelgate-bench-runner-'))
  const configPath = join(dataDir, 'bench-config.json')
  const logPath = join(dataDir, 'runner.log')
  const storage = storeSettings(store)
  await writeFile(configPath, JSON.stringify({ providers: benchProviders(upstreamUrl), models: BENCH_MODELS }))
  const removeAll = async () => {
    await storage.cleanUp()
    await rm(dataDir, { recursive: true, force: true })
  }
  const logFd = openSync(logPath, 'a')
  // Only what it needs: no MODELGATE_* setting or provider key of the bench's own environment reaches it.
  const env = {
    PATH: process.env.PATH ?? '',
    MODELGATE_CONFIG: configPath,
    MODELGATE_DATA_DIR: join(dataDir, 'store'),
    MODELGATE_HOST: '127.0.0.1',
    MODELGATE_PORT: '0',
    MODELGATE_MANAGEMENT_KEY: MANAGEMENT_KEY,
    ...storage.env,
    // What a run asks to compare (BENCH_RUNNER_ENV, a JSON object): another log level, another store.
    ...(JSON.parse(process.env.BENCH_RUNNER_ENV ?? '{}') as Record<string, string>),
  }
  const args = [...(column.execArgv ?? []), join(buildDir, 'cli.js'), 'serve', ...(column.workers > 1 ? ['--workers', String(column.workers)] : [])]
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', logFd] })
  closeSync(logFd)
  trackChild(child)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))

  const url = await new Promise<string | undefined>((resolve, reject) => {
    let stdout = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${column.label}: not listening within ${STARTUP_TIMEOUT_MS} ms`))
    }, STARTUP_TIMEOUT_MS)
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const match = /modelgate listening on (http:\/\/\S+)/.exec(stdout)
      if (!match) return
      clearTimeout(timer)
      resolve(match[1])
    })
    void exited.then(() => {
      clearTimeout(timer)
      resolve(undefined)
    })
  })
  if (url === undefined) {
    const log = await readFile(logPath, 'utf8').catch(() => '')
    await removeAll()
    const refusal = log.split('\n').find((line) => line.includes(STORE_NOT_SHARED))
    if (refusal) return { skipped: refusal.replace(/^modelgate: /, '') }
    throw new Error(`${column.label} exited before listening:\n${log.slice(-2000)}`)
  }
  // Drained, so the pipe never fills; it says nothing more after the listening line.
  child.stdout!.resume()

  const created = await fetch(`${url}/api/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${MANAGEMENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  })
  if (created.status !== 201) throw new Error(`${column.label}: creating a key answered ${created.status}: ${await created.text()}`)
  const { key } = (await created.json()) as { key: string }

  const server: ServerProcess = {
    name: column.label,
    pid: child.pid!,
    ready: { url, key },
    // A full collection cannot be asked of it: its live heap is not measured.
    stats: async () => treeStats(child.pid!),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
        await exited
        clearTimeout(timer)
      }
      await removeAll()
    },
  }
  return modelgateTarget(column.label, server, column.onlyIn)
}
