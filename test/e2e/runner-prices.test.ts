/**
 * The runner's price file: read before it listens, applied to `GET /models`, reloaded when the file changes
 * and on SIGHUP, and a broken file keeps the prices in force. Runs the built CLI as a real process.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startListening, type RunningProcess } from '../helpers/process'

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'dist/cli.js')
const CLAUDE = 'anthropic/claude-sonnet-4.5'

const priceDocument = (prompt: number) => JSON.stringify({ prices: [{ model: CLAUDE, pricing: { prompt } }] })

/** Resolves once the process has written `count` log lines with this message (the log is on stderr). */
const logLines = (server: RunningProcess, message: string, count: number) =>
  new Promise<void>((done) => {
    const check = () => {
      const seen = server.stderr().split('\n').filter((line) => line.includes(`"message":"${message}"`)).length
      if (seen < count) return false
      server.child.stderr.off('data', check)
      done()
      return true
    }
    if (!check()) server.child.stderr.on('data', check)
  })

describe('runner price file', () => {
  let dataDir: string
  let server: RunningProcess | undefined

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'modelgate-prices-'))
  })
  afterEach(async () => {
    await server?.stop('SIGKILL')
    server = undefined
    await rm(dataDir, { recursive: true, force: true })
  })

  it('prices GET /models from the file, reloads it when it changes and on SIGHUP, and keeps the prices when it breaks', async () => {
    const pricesPath = join(dataDir, 'prices.json')
    await writeFile(pricesPath, priceDocument(0.000001))
    server = await startListening('node', [CLI, 'serve'], {
      env: { MODELGATE_DATA_DIR: dataDir, MODELGATE_PORT: '0', MODELGATE_LOG_LEVEL: 'info', MODELGATE_PRICE_SOURCE: pricesPath },
    })
    const claudePrompt = async () => {
      const body = await (await fetch(`${server!.url}/api/v1/models`)).json()
      return body.data.find((model: { id: string }) => model.id === CLAUDE).pricing.prompt
    }
    // Loaded before the listening line: the first request is already priced by the file.
    expect(await claudePrompt()).toBe('0.000001')

    await writeFile(pricesPath, priceDocument(0.000002))
    await logLines(server, 'prices refreshed', 2)
    expect(await claudePrompt()).toBe('0.000002')

    await writeFile(pricesPath, '{"prices": [')
    await logLines(server, 'price refresh failed; the previous prices stay', 1)
    expect(await claudePrompt()).toBe('0.000002')

    await writeFile(pricesPath, priceDocument(0.0000025))
    await logLines(server, 'prices refreshed', 3)
    server.child.kill('SIGHUP')
    await logLines(server, 'prices refreshed', 4)
    expect(await claudePrompt()).toBe('0.0000025')
    expect(server.stderr()).toContain(`is not valid JSON`)
    // SIGHUP reloads; it does not stop the gateway.
    expect(server.child.exitCode).toBeNull()
  })
})
