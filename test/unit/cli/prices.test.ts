import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resolveConfig } from '../../../src/cli/config'
import { configFromEnvironment } from '../../../src/cli/variables'
import { isUrlSource, priceSourceOptions, readPriceFile, watchPriceFile } from '../../../src/cli/prices'

let directory: string
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'modelgate-prices-'))
})
afterEach(async () => {
  await rm(directory, { recursive: true, force: true })
})

describe('the runner’s price source settings', () => {
  it('come from the config file or MODELGATE_PRICE_SOURCE and MODELGATE_PRICE_REFRESH_SECONDS', () => {
    const fromEnvironment = resolveConfig(configFromEnvironment({ MODELGATE_PRICE_SOURCE: 'https://prices.example.test/p.json', MODELGATE_PRICE_REFRESH_SECONDS: '600' }))
    expect(fromEnvironment).toMatchObject({ priceSource: 'https://prices.example.test/p.json', priceRefreshSeconds: 600 })
    expect(resolveConfig({ priceSource: './prices.json', prices: [{ model: 'openai/gpt-4.1', pricing: { prompt: 0.000001 } }] })).toMatchObject({
      priceSource: './prices.json',
      prices: [{ model: 'openai/gpt-4.1', pricing: { prompt: 0.000001 } }],
    })
  })

  it('refuse a plain-HTTP URL off loopback, a refresh interval out of range, and an invalid override', () => {
    expect(() => resolveConfig({ priceSource: 'http://prices.example.test/p.json' })).toThrow(
      'modelgate: invalid configuration: priceSource: must be a file path, or an https:// URL (http:// only on a loopback host)',
    )
    expect(() => resolveConfig(configFromEnvironment({ MODELGATE_PRICE_REFRESH_SECONDS: '1' }))).toThrow('priceRefreshSeconds: must be at least 10')
    expect(() => resolveConfig({ prices: [{ model: 'openai/gpt-4.1', pricing: { prompt: -1 } }] } as never)).toThrow('prices.0.pricing.prompt: must not be negative')
  })

  it('make a URL a fetched source and a path a file read, reloaded on change rather than on a timer', async () => {
    expect(isUrlSource('https://prices.example.test/p.json')).toBe(true)
    expect(isUrlSource('./prices.json')).toBe(false)
    expect(priceSourceOptions('https://prices.example.test/p.json', 120)).toEqual({ url: 'https://prices.example.test/p.json', refreshSeconds: 120 })
    const path = join(directory, 'prices.json')
    await writeFile(path, JSON.stringify({ prices: [] }))
    const options = priceSourceOptions(path, undefined)
    expect(options).toMatchObject({ label: `file ${path}`, refreshSeconds: false })
    expect(await options.load!()).toEqual({ prices: [] })
  })
})

describe('readPriceFile', () => {
  it('names a missing file or one that is not JSON, without quoting its content', async () => {
    const missing = join(directory, 'missing.json')
    await expect(readPriceFile(missing)).rejects.toThrow(`cannot read ${missing}: ENOENT`)
    const broken = join(directory, 'broken.json')
    await writeFile(broken, '{"prices": [sk-secret')
    const error = await readPriceFile(broken).catch((failure: Error) => failure)
    expect((error as Error).message).toBe(`${broken} is not valid JSON`)
  })
})

describe('watchPriceFile', () => {
  it('calls back when the file is rewritten, or replaced by a rename as editors save', async () => {
    const path = join(directory, 'prices.json')
    await writeFile(path, '{"prices":[]}')
    let changed!: () => void
    let next = new Promise<void>((resolve) => (changed = resolve))
    const stop = watchPriceFile(path, () => changed())
    try {
      await writeFile(path, '{"prices":[{"model":"openai/gpt-4.1","pricing":{"prompt":0}}]}')
      await next
      next = new Promise<void>((resolve) => (changed = resolve))
      await writeFile(join(directory, 'prices.json.tmp'), '{"prices":[]}')
      await rename(join(directory, 'prices.json.tmp'), path)
      await next
    } finally {
      stop()
    }
  })
})
