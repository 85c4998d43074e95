/**
 * A runner whose parent dies (npm or a shell killed without passing the signal on) shuts down by itself and
 * closes its store, instead of living on as an orphan that holds it (the embedded file store's lock, SQLite's open log).
 */

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'

const CLI = resolve(__dirname, '../../dist/cli.js')

/** Whether the process runs; an exited one that its new parent has not reaped yet (a zombie) does not. */
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    // /proc/<pid>/stat: "pid (name) state …"
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

describe('a runner whose parent process dies', () => {
  const dataDirs: string[] = []
  const runnerPids: number[] = []

  afterEach(async () => {
    // A runner that survived (a failed test, or one told not to watch) must not outlive the run.
    for (const pid of runnerPids.splice(0)) if (isAlive(pid)) process.kill(pid, 'SIGKILL')
    await Promise.all(dataDirs.splice(0).map((directory) => rm(directory, { recursive: true, force: true })))
  })

  /** Starts the runner under an intermediate shell, as `npm start` does, and waits for it to listen. */
  const startUnderShell = async (env: Record<string, string>) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'modelgate-parent-'))
    dataDirs.push(dataDir)
    const shell = spawn('sh', ['-c', `echo "runner pid $$"; node "${CLI}" serve & echo "runner pid $!"; wait`], {
      env: { ...process.env, MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_LOG_LEVEL: 'info', MODELGATE_MANAGEMENT_KEY: 'operator-key-0123456789abcdef', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }) as ChildProcessWithoutNullStreams
    let stdout = ''
    let stderr = ''
    shell.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    shell.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    // The runner keeps the shell's pipes: they close only when the runner itself has exited.
    const closed = Promise.all([once(shell.stdout, 'close'), once(shell.stderr, 'close')])
    await vi.waitFor(() => expect(stdout).toMatch(/modelgate listening on http:\/\/\S+/), { timeout: 30_000, interval: 50 })
    const runnerPid = Number([...stdout.matchAll(/runner pid (\d+)/g)][1]![1])
    runnerPids.push(runnerPid)
    const url = /modelgate listening on (http:\/\/\S+)/.exec(stdout)![1]!
    return { shell, url, closed, dataDir, runnerPid, stderr: () => stderr }
  }

  it('shuts down gracefully and closes the store when started by npm (npm_lifecycle_event)', async () => {
    const { shell, url, closed, dataDir, runnerPid, stderr } = await startUnderShell({ npm_lifecycle_event: 'start' })
    expect((await fetch(`${url}/api/v1/health`)).status).toBe(200)
    // SQLite's write-ahead log lives while a connection is open; the last clean close folds it in and removes it.
    expect(existsSync(join(dataDir, 'modelgate.db-wal'))).toBe(true)
    shell.kill('SIGKILL')
    await closed
    expect(isAlive(runnerPid)).toBe(false)
    expect(stderr()).toContain('"message":"shutting down","signal":"parent process exited"')
    expect(stderr()).toContain('"message":"stopped"')
    // Closed cleanly, not left for the next opener to recover.
    expect(existsSync(join(dataDir, 'modelgate.db-wal'))).toBe(false)
  })

  it('watches outside npm only when MODELGATE_WATCH_PARENT=1 asks for it', async () => {
    const watched = await startUnderShell({ npm_lifecycle_event: '', MODELGATE_WATCH_PARENT: '1' })
    watched.shell.kill('SIGKILL')
    await watched.closed
    expect(isAlive(watched.runnerPid)).toBe(false)

    // Under a process manager or in a container the parent is no wrapper: nothing to watch by default.
    const unwatched = await startUnderShell({ npm_lifecycle_event: '' })
    expect(watched.stderr()).toContain('the gateway stops when its parent process exits')
    expect(unwatched.stderr()).not.toContain('the gateway stops when its parent process exits')
    expect(unwatched.stderr()).toContain('"message":"modelgate listening"')
  })
})
