/**
 * The operator's dashboard page as the gateway serves it: off unless enabled, at its path outside the API, one
 * self-contained document whose Content-Security-Policy allows its own script and style by hash and nothing else.
 * What the page shows is tested in a real browser (test/e2e/dashboard-browser.test.ts).
 */

import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { createGateway, type Gateway } from '../../../src/gateway/gateway'
import { DASHBOARD_SCRIPT, DASHBOARD_STYLE } from '../../../src/dashboard/assets'
import { escapeHtml } from '../../../src/dashboard/page'
import { dashboardAssetsSource } from '../../../scripts/generate-dashboard-assets'

let gateway: Gateway | undefined
afterEach(async () => {
  await gateway?.close()
  gateway = undefined
})

const start = (options: Parameters<typeof createGateway>[0] = {}) => {
  gateway = createGateway({ logger: false, ...options })
  return gateway
}

const get = (path: string, method = 'GET') => gateway!.fetch(new Request(`http://gateway.test${path}`, { method }))

const hashOf = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`

describe('the dashboard page', () => {
  it('is off unless enabled', async () => {
    start()
    expect((await get('/dashboard')).status).toBe(404)
    start({ dashboard: false })
    expect((await get('/dashboard')).status).toBe(404)
  })

  it('is one document with a strict policy: its own script and style by hash, its own origin, no framing, no caching', async () => {
    start({ dashboard: true })
    const response = await get('/dashboard')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(response.headers.get('x-frame-options')).toBe('DENY')
    expect(response.headers.get('referrer-policy')).toBe('no-referrer')
    const csp = response.headers.get('content-security-policy')!
    expect(csp.split('; ')).toEqual([
      "default-src 'none'",
      `script-src ${hashOf(DASHBOARD_SCRIPT)}`,
      `style-src ${hashOf(DASHBOARD_STYLE)}`,
      "connect-src 'self'",
      "img-src 'self'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ])
    expect(csp).not.toMatch(/unsafe|https?:|\*/)
    const html = await response.text()
    expect(html).toContain(`<script type="module">${DASHBOARD_SCRIPT}</script>`)
    expect(html).toContain(`<style>${DASHBOARD_STYLE}</style>`)
    // Nothing loaded from anywhere: no script, style sheet or image by URL.
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|<img /)
    expect(html).toContain('<meta name="modelgate-api" content="/api/v1">')
    expect(response.headers.get('x-request-id')).toMatch(/.+/)
    // With a trailing slash too; any other method is the API's business (no route there).
    expect((await get('/dashboard/')).status).toBe(200)
    expect((await get('/dashboard', 'POST')).status).toBe(404)
    expect((await get('/dashboard/other')).status).toBe(404)
  })

  it('is served at its configured path, outside the base path, and refuses one inside it', async () => {
    start({ dashboard: { path: '/ops/llm' }, basePath: '/v1' })
    expect((await get('/ops/llm')).status).toBe(200)
    expect(await (await get('/ops/llm')).text()).toContain('<meta name="modelgate-api" content="/v1">')
    expect((await get('/dashboard')).status).toBe(404)
    expect(() => createGateway({ logger: false, dashboard: { path: '/v1/dashboard' }, basePath: '/v1' })).toThrow(
      "options.dashboard.path: must be outside the API's base path /v1",
    )
    expect(() => createGateway({ logger: false, dashboard: { path: 'dashboard/' } })).toThrow(/options\.dashboard/)
  })

  it("builds the DOM from text only: the script has no HTML sink a key or model name could reach", () => {
    expect(DASHBOARD_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|javascript:/)
    // The key lives in sessionStorage only: never a cookie, localStorage or a URL's query.
    expect(DASHBOARD_SCRIPT).not.toMatch(/document\.cookie|localStorage/)
    expect(DASHBOARD_SCRIPT).toContain('sessionStorage')
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;')
  })

  it('embeds the client as it is now (run npm run dashboard:generate after changing src/dashboard/client/)', () => {
    expect(readFileSync(new URL('../../../src/dashboard/assets.ts', import.meta.url), 'utf8')).toBe(dashboardAssetsSource())
  })
})
