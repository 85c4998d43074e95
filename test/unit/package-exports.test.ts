import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { entry, UNEXPORTED_ENTRIES } from '../../tsup.config'

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))

describe('package.json exports', () => {
  it('has one export per tsup entry (besides the CLI and the worker scripts), each with types and default', () => {
    const fromEntries = Object.keys(entry)
      .filter((name) => !UNEXPORTED_ENTRIES.includes(name))
      .map((name) => (name === 'index' ? '.' : `./${name}`))
      .sort()
    const exported = Object.keys(manifest.exports).filter((name) => name !== './package.json').sort()
    expect(exported).toEqual(fromEntries)
    for (const name of exported) {
      const file = name === '.' ? 'index' : name.slice(2)
      expect(manifest.exports[name]).toEqual({ types: `./dist/${file}.d.ts`, default: `./dist/${file}.js` })
    }
    expect(manifest.bin.modelgate).toBe('./dist/cli.js')
  })

  it('is ESM-only and runs on Node 20', () => {
    expect(manifest.type).toBe('module')
    expect(manifest.engines.node).toBe('>=20')
  })

  it('keeps the core free of Node-only imports', async () => {
    const { readdirSync } = await import('node:fs')
    const offenders: string[] = []
    for (const folder of ['core', 'routes', 'repositories', 'services']) {
      for (const file of readdirSync(new URL(`../../src/${folder}`, import.meta.url))) {
        const text = readFileSync(new URL(`../../src/${folder}/${file}`, import.meta.url), 'utf8')
        if (/from ['"](node:|ioredis|undici|pg|mysql2)/.test(text)) offenders.push(`${folder}/${file}`)
      }
    }
    expect(offenders).toEqual([])
  })
})
