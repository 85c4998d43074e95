/**
 * The operator's dashboard in a real headless Chromium (Debian's `chromium`, driven by playwright-core): a gateway on
 * loopback with the memory store and the testing kit's scripted providers takes a known set of requests (two models,
 * two keys, a stream, a fallback and a failure); the page, signed in with a management key, must show the figures
 * `GET /stats` gives for the same range, escape a key name written as HTML, and keep the key out of URLs and cookies.
 * A screenshot is saved to .test-output/dashboard.png.
 *
 * Without a browser this file fails in CI (CI=true; .ci/run installs chromium) and is skipped elsewhere, saying why.
 */

import { existsSync, mkdirSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toNodeListener } from '../../src/adapters/node'
import { createTestGateway, scriptedProvider, TEST_MODEL, type ScriptedAnswer, type TestGateway } from '../../src/testing'
import { closeServer } from '../helpers/servers'

const CHROMIUM = process.env.MODELGATE_CHROMIUM ?? '/usr/bin/chromium'
const OUTPUT = new URL('../../.test-output/', import.meta.url)

/** The browser, or why there is none. */
const launch = async (): Promise<Browser | string> => {
  if (!existsSync(CHROMIUM)) return `no browser at ${CHROMIUM} (apt-get install chromium, or set MODELGATE_CHROMIUM)`
  try {
    // As root (CI, containers) Chromium's sandbox cannot start; the page is our own, served from loopback.
    return await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  } catch (error) {
    return `${CHROMIUM} did not start: ${(error as Error).message.split('\n')[0]}`
  }
}

const launched = await launch()
if (typeof launched === 'string') {
  if (process.env.CI === 'true') throw new Error(`The dashboard's browser test needs Chromium in CI: ${launched}`)
  console.warn(`skipping the dashboard's browser test: ${launched}`)
}
const browser = typeof launched === 'string' ? undefined : launched

const OTHER_MODEL = 'test/other'
/** A key name that is HTML: the page must show it as text, and run nothing. */
const XSS_NAME = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`

const answer = (input: number, output: number): ScriptedAnswer => [
  { type: 'text', text: ['ok', ' then'] },
  { type: 'usage', inputTokens: input, outputTokens: output },
]

let harness: TestGateway
let server: Server
let origin: string
let xssKeyHash: string
const started = performance.now()

/** `GET /stats` as the dashboard's management key asks it. */
const statsFor = async (query: Record<string, string>) => {
  const response = await harness.call('GET', `/stats?${new URLSearchParams(query)}`)
  expect(response.status).toBe(200)
  return (await response.json()).data
}

// The page's formatting (src/dashboard/client/dashboard.ts), for the figures' visible text.
const usd = (value: number) => `$${value.toFixed(value !== 0 && Math.abs(value) < 1 ? 6 : 2)}`
const ms = (value: number | null) => (value === null ? '–' : `${Math.round(value).toLocaleString('en-US')} ms`)

const figureOf = async (page: Page, name: string) => {
  const element = page.locator(`[data-figure="${name}"]`)
  return { value: await element.getAttribute('data-value'), text: await element.locator('.value').textContent() }
}

describe.skipIf(!browser)("the operator's dashboard in Chromium", () => {
  beforeAll(async () => {
    harness = await createTestGateway({
      dashboard: true,
      outlierDetection: false,
      providers: {
        alpha: scriptedProvider({ replies: [answer(10, 5), [{ type: 'http_error', status: 500 }]] }),
        beta: scriptedProvider({ replies: [answer(20, 8), answer(7, 3), [{ type: 'http_error', status: 400, message: 'refused' }]] }),
      },
      models: [{ slug: OTHER_MODEL, name: 'Other', endpoints: [{ provider: 'beta', model: 'other', contextLength: 8000, pricing: { prompt: 0.000003, completion: 0.000004 } }] }],
    })
    const xss = await harness.gateway.admin.createKey({ kind: 'regular', name: XSS_NAME })
    xssKeyHash = xss.record.hash
    // The regular key: one answer from alpha, one after alpha failed (a fallback to beta).
    expect((await harness.responses({ model: TEST_MODEL, input: 'one' })).status).toBe(200)
    expect((await harness.responses({ model: TEST_MODEL, input: 'two' })).status).toBe(200)
    // The second key: a stream (it has a time to first token), then a failure.
    const streamed = await harness.responses({ model: OTHER_MODEL, input: 'three', stream: true }, { key: xss.key })
    expect(await streamed.text()).toContain('response.completed')
    expect((await harness.responses({ model: OTHER_MODEL, input: 'four' }, { key: xss.key })).status).toBe(400)
    await harness.gateway.flushSpend()
    // A limit the second key has used 90% of: the page lists it as near its limit.
    const used = (await (await harness.call('GET', `/keys/${xssKeyHash}`)).json()).data.usage as number
    expect(used).toBeGreaterThan(0)
    expect((await harness.call('PATCH', `/keys/${xssKeyHash}`, { json: { limit: used / 0.9 } })).status).toBe(200)

    server = createServer(toNodeListener(harness.gateway))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    await browser?.close()
    if (server) await closeServer(server)
    await harness?.close()
    console.info(`the dashboard's browser test took ${Math.round(performance.now() - started)} ms`)
  })

  it('signs in with a management key and shows the figures GET /stats gives for the same range', async () => {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const policyViolations: string[] = []
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) policyViolations.push(message.text())
    })
    const dialogs: string[] = []
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })

    const opened = await page.goto(`${origin}/dashboard`)
    expect(opened?.status()).toBe(200)
    expect(opened?.headers()['content-security-policy']).toMatch(/^default-src 'none'; script-src 'sha256-/)

    // A key that is not a management key is refused, and the page says so.
    await page.fill('#management-key', harness.regularKey)
    await page.click('#sign-in button[type="submit"]')
    await expect.poll(() => page.locator('#sign-in [role="alert"]').textContent()).toContain('not a management key')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)

    await page.fill('#management-key', harness.managementKey)
    await page.click('#sign-in button[type="submit"]')
    await page.waitForSelector('body[data-state="ready"]')

    const range = page.locator('#window')
    const from = (await range.getAttribute('data-from'))!
    const to = (await range.getAttribute('data-to'))!
    const stats = await statsFor({ from, to })
    expect(stats.total.requests).toBe(4)
    const total = stats.total

    expect(await figureOf(page, 'requests')).toEqual({ value: String(total.requests), text: '4' })
    expect(await figureOf(page, 'cost')).toEqual({ value: String(total.cost), text: usd(total.cost) })
    expect(await figureOf(page, 'prompt_tokens')).toEqual({ value: String(total.prompt_tokens), text: String(10 + 20 + 7) })
    expect(await figureOf(page, 'completion_tokens')).toEqual({ value: String(total.completion_tokens), text: String(5 + 8 + 3) })
    expect(await figureOf(page, 'error_rate')).toEqual({ value: '0.25', text: '25.0%' })
    expect(await figureOf(page, 'fallback_rate')).toEqual({ value: '0.25', text: '25.0%' })
    for (const p of ['p50', 'p95', 'p99'] as const) {
      expect(await figureOf(page, `latency_${p}`)).toEqual({ value: String(total.latency_ms[p]), text: ms(total.latency_ms[p]) })
    }
    // One stream, so every first-token percentile is its time to first token.
    expect(total.time_to_first_token_ms.p50).not.toBeNull()
    expect(await figureOf(page, 'ttft_p95')).toEqual({ value: String(total.time_to_first_token_ms.p95), text: ms(total.time_to_first_token_ms.p95) })

    // The breakdowns agree with the API's, row by row.
    for (const group of ['key', 'model', 'provider', 'workspace'] as const) {
      const { groups } = await statsFor({ from, to, group_by: group })
      const rows = page.locator(`[data-breakdown="${group}"] tbody tr`)
      expect(await rows.count()).toBe(groups.length)
      for (const [index, row] of (groups as Array<{ group: string | null; requests: number; cost: number }>).entries()) {
        const cells = rows.nth(index)
        expect(await cells.getAttribute('data-group')).toBe(row.group ?? '')
        expect(await cells.locator('[data-col="requests"]').textContent()).toBe(String(row.requests))
        expect(await cells.locator('[data-col="cost"]').textContent()).toBe(usd(row.cost))
      }
    }
    const models = await page.locator('[data-breakdown="model"] tbody th').allTextContents()
    expect(models).toEqual([TEST_MODEL, OTHER_MODEL])

    // The key named in HTML is shown as that text, and nothing in it ran or became an element.
    const keyNames = await page.locator('[data-breakdown="key"] tbody th').allTextContents()
    expect(keyNames).toContain(XSS_NAME)
    expect(keyNames).toContain('test regular')
    expect(await page.locator('#limits tbody th').allTextContents()).toEqual([XSS_NAME])
    expect(await page.locator('#limits tbody td').first().textContent()).toBe('90.0%')
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined()
    expect(await page.locator('main img, main script').count()).toBe(0)
    expect(dialogs).toEqual([])

    // Recent generations, newest first, each linking to its details from GET /generation.
    const recent = page.locator('#recent tbody tr')
    expect(await recent.count()).toBe(4)
    expect(await recent.first().getAttribute('data-generation')).toBe(stats.recent[0].id)
    const streamedId = stats.recent.find((item: { time_to_first_token_ms: number | null }) => item.time_to_first_token_ms !== null).id as string
    await page.click(`#recent tr[data-generation="${streamedId}"] a`)
    await page.waitForSelector(`#generation[data-id="${streamedId}"]`)
    const detail = (await (await harness.call('GET', `/generation?id=${streamedId}`)).json()).data
    expect(await page.locator('#generation [data-field="model"]').textContent()).toBe(OTHER_MODEL)
    expect(await page.locator('#generation [data-field="total_cost"]').textContent()).toBe(String(detail.total_cost))
    expect(await page.locator('#generation [data-field="time_to_first_token"]').textContent()).toBe(String(detail.time_to_first_token))

    // The key is in this tab's session storage only: not in the address, a cookie or local storage.
    expect(page.url()).not.toContain(harness.managementKey)
    expect(await context.cookies()).toEqual([])
    expect(await page.evaluate(() => localStorage.length)).toBe(0)
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([harness.managementKey])
    expect(policyViolations).toEqual([])

    mkdirSync(OUTPUT, { recursive: true })
    await page.screenshot({ path: new URL('dashboard.png', OUTPUT).pathname, fullPage: true })

    await page.click('#sign-out')
    await page.waitForSelector('#sign-in')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await context.close()
  })
})
