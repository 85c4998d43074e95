/**
 * The operator's dashboard page (docs/dashboard.md): one self-contained HTML document, its script and style inline and
 * allowed by hash, served by the gateway's own handler outside the API's base path when `dashboard` is on. It holds no
 * data: the script reads the gateway's API with the management key the operator types in.
 */

import { responseReply, type Reply } from '../core/reply'
import { DASHBOARD_SCRIPT, DASHBOARD_SCRIPT_HASH, DASHBOARD_STYLE, DASHBOARD_STYLE_HASH } from './assets'

/** Where the dashboard is served unless `dashboard.path` says otherwise. */
export const DEFAULT_DASHBOARD_PATH = '/dashboard'

/**
 * Nothing but the page's own script and style runs or applies, the page talks to its own origin only, is framed by
 * nobody, and submits no form anywhere (docs/decisions.md, "The operator's dashboard").
 */
const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${DASHBOARD_SCRIPT_HASH}`,
  `style-src ${DASHBOARD_STYLE_HASH}`,
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  // The page is the same for everyone, but nothing about a signed-in session may be kept by a cache on the way.
  'cache-control': 'no-store',
} as const

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => ESCAPES[character]!)

const pageHtml = (apiBasePath: string, pagePath: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="modelgate-api" content="${escapeHtml(apiBasePath)}">
<meta name="modelgate-page" content="${escapeHtml(pagePath)}">
<title>modelgate dashboard</title>
<style>${DASHBOARD_STYLE}</style>
</head>
<body data-state="loading">
<header><h1>modelgate</h1><span class="tagline">operator dashboard</span></header>
<main id="app"><noscript>The dashboard needs JavaScript.</noscript></main>
<script type="module">${DASHBOARD_SCRIPT}</script>
</body>
</html>
`

/** Serves the page at one path (with or without a trailing slash), reading the API at `apiBasePath`. */
export const createDashboardPage = (path: string, apiBasePath: string) => {
  const pages = new Map([path, `${path}/`].map((pagePath) => [pagePath, pageHtml(apiBasePath, pagePath)]))
  return {
    /** The page for a GET of this path, or undefined when the request is not for it. */
    replyFor(method: string, pathname: string): Reply | undefined {
      const html = method === 'GET' ? pages.get(pathname) : undefined
      return html === undefined ? undefined : responseReply(new Response(html, { status: 200, headers: HEADERS }))
    },
  }
}
