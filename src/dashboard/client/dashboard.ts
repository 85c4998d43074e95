/**
 * The operator's dashboard in the browser (docs/dashboard.md). Compiled to the script the page loads by
 * scripts/generate-dashboard-assets.ts; it runs in the browser only, and imports nothing.
 *
 * Safety: every value from the API (key names, model slugs, workspace names are caller-controlled) reaches the page
 * as a text node or an attribute set through the DOM, never as HTML. The management key is kept in sessionStorage
 * only and sent as `Authorization: Bearer` to the gateway's own API, never in a URL or a cookie.
 */

export {}

const KEY_STORAGE = 'modelgate.dashboard.key'
const GROUPS = ['key', 'model', 'provider', 'workspace'] as const
type Group = (typeof GROUPS)[number]
const RANGES: ReadonlyArray<{ label: string; ms: number }> = [
  { label: 'Last hour', ms: 3_600_000 },
  { label: 'Last 24 hours', ms: 86_400_000 },
  { label: 'Last 7 days', ms: 7 * 86_400_000 },
  { label: 'Last 30 days', ms: 30 * 86_400_000 },
]
/** Keys at or past this share of their limit are "near" it. */
const NEAR_LIMIT = 0.8

interface Percentiles {
  p50: number | null
  p95: number | null
  p99: number | null
}
interface Bucket {
  start: string
  requests: number
  errors: number
  cost: number
  prompt_tokens: number
  completion_tokens: number
}
interface Figures {
  requests: number
  errors: number
  fallbacks: number
  error_rate: number
  fallback_rate: number
  cost: number
  prompt_tokens: number
  completion_tokens: number
  reasoning_tokens: number
  cached_tokens: number
  latency_ms: Percentiles
  time_to_first_token_ms: Percentiles
  series: Bucket[]
}
interface Recent {
  id: string
  created_at: string
  model: string
  provider: string | null
  key_hash: string
  workspace_id: string
  status: string
  error_type: string | null
  is_fallback: boolean
  cost: number
  prompt_tokens: number
  completion_tokens: number
  latency_ms: number
  time_to_first_token_ms: number | null
}
interface Stats {
  from: string
  to: string
  bucket: 'hour' | 'day'
  truncated: boolean
  total: Figures
  groups?: Array<Figures & { group: string | null }>
  recent: Recent[]
}
interface ApiKey {
  hash: string
  name: string
  label: string
  kind: string
  disabled: boolean
  limit: number | null
  limit_remaining: number | null
  limit_reset: string | null
  usage: number
}
interface Workspace {
  id: string
  name: string
}

class SignedOut extends Error {}

// ---------------------------------------------------------------------------------------------------------------
// The DOM, built only through text nodes and attributes.

type Child = Node | string | number | null | undefined | false
type Attributes = Record<string, string | undefined>

const h = (tag: string, attributes: Attributes = {}, ...children: Child[]): HTMLElement => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) element.setAttribute(name, value)
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    element.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child)
  }
  return element
}

const SVG = 'http://www.w3.org/2000/svg'
const s = (tag: string, attributes: Record<string, string | number> = {}, ...children: Array<Node | string>): SVGElement => {
  const element = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  for (const child of children) element.append(typeof child === 'string' ? document.createTextNode(child) : child)
  return element
}

// ---------------------------------------------------------------------------------------------------------------
// Formatting: one function per kind of figure, so the page and its tests agree on what a figure looks like.

const formatCount = (value: number) => value.toLocaleString('en-US')
const formatUsd = (value: number) => `$${value.toFixed(value !== 0 && Math.abs(value) < 1 ? 6 : 2)}`
const formatRate = (value: number) => `${(value * 100).toFixed(1)}%`
const formatMs = (value: number | null) => (value === null ? '–' : `${formatCount(Math.round(value))} ms`)
const formatTime = (iso: string) => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')

// ---------------------------------------------------------------------------------------------------------------
// The gateway's API.

/**
 * Where the API is: the gateway's base path, under whatever prefix a host mounted the gateway at (an Express app's
 * `app.use('/ai', …)`): the page's own path as the browser sees it ends with the path the gateway saw.
 */
const apiBase = (): URL => {
  const meta = (name: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? ''
  const seen = meta('modelgate-page')
  const prefix = seen !== '' && location.pathname.endsWith(seen) ? location.pathname.slice(0, -seen.length) : ''
  return new URL(`${prefix}${meta('modelgate-api')}/`, location.origin)
}

const storedKey = (): string | null => sessionStorage.getItem(KEY_STORAGE)

const api = async <T>(path: string, query: Record<string, string> = {}): Promise<T> => {
  const key = storedKey()
  if (!key) throw new SignedOut('Sign in with a management key.')
  const url = new URL(path, apiBase())
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}` }, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' })
  const body = (await response.json().catch(() => null)) as { data?: unknown; error?: { message?: string } } | null
  if (response.status === 401) throw new SignedOut('That key was not accepted. Sign in with a management key.')
  if (response.status === 403) throw new SignedOut('That key is not a management key. Sign in with a management key.')
  if (!response.ok) throw new Error(`${path}: ${response.status} ${body?.error?.message ?? response.statusText}`)
  return body as T
}

/** Every page of a listing (`offset`, `limit`). */
const listAll = async <T>(path: string, pageSize: number): Promise<T[]> => {
  const items: T[] = []
  for (let offset = 0; ; offset += pageSize) {
    const page = await api<{ data: T[]; total_count: number }>(path, { offset: String(offset), limit: String(pageSize) })
    items.push(...page.data)
    if (page.data.length < pageSize || items.length >= page.total_count) return items
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The page.

const root = () => document.getElementById('app')!

const setState = (state: 'signed-out' | 'loading' | 'ready' | 'error') => {
  document.body.dataset.state = state
}

const renderSignIn = (message?: string) => {
  const input = h('input', { id: 'management-key', name: 'management-key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: '' }) as HTMLInputElement
  const form = h(
    'form',
    { id: 'sign-in', class: 'panel' },
    h('h2', {}, 'Sign in'),
    h('p', {}, 'The dashboard reads the gateway’s API with a management key. It is kept in this tab’s session storage only, and sent to this gateway alone.'),
    message ? h('p', { class: 'notice', role: 'alert' }, message) : null,
    h('label', { for: 'management-key' }, 'Management key'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const key = input.value.trim()
    if (!key) return
    sessionStorage.setItem(KEY_STORAGE, key)
    input.value = ''
    void load()
  })
  root().replaceChildren(form)
  setState('signed-out')
  input.focus()
}

let rangeIndex = 1

const figure = (name: string, label: string, text: string, value: number | null, hint: string) =>
  h('div', { class: 'figure', 'data-figure': name, 'data-value': value === null ? '' : String(value), title: hint }, h('span', { class: 'label' }, label), h('span', { class: 'value' }, text))

const summary = (total: Figures) =>
  h(
    'section',
    { id: 'summary', class: 'figures' },
    figure('requests', 'Requests', formatCount(total.requests), total.requests, 'Requests recorded in the range'),
    figure('cost', 'Spend', formatUsd(total.cost), total.cost, 'What callers were charged, in USD'),
    figure('prompt_tokens', 'Prompt tokens', formatCount(total.prompt_tokens), total.prompt_tokens, 'Input tokens'),
    figure('completion_tokens', 'Completion tokens', formatCount(total.completion_tokens), total.completion_tokens, 'Output tokens'),
    figure('error_rate', 'Error rate', formatRate(total.error_rate), total.error_rate, `${total.errors} failed requests`),
    figure('fallback_rate', 'Fallback rate', formatRate(total.fallback_rate), total.fallback_rate, `${total.fallbacks} requests needed another endpoint`),
    figure('latency_p50', 'Latency p50', formatMs(total.latency_ms.p50), total.latency_ms.p50, 'From arrival to the end of the answer'),
    figure('latency_p95', 'Latency p95', formatMs(total.latency_ms.p95), total.latency_ms.p95, 'From arrival to the end of the answer'),
    figure('latency_p99', 'Latency p99', formatMs(total.latency_ms.p99), total.latency_ms.p99, 'From arrival to the end of the answer'),
    figure('ttft_p50', 'First token p50', formatMs(total.time_to_first_token_ms.p50), total.time_to_first_token_ms.p50, 'Streams: from arrival to the first content'),
    figure('ttft_p95', 'First token p95', formatMs(total.time_to_first_token_ms.p95), total.time_to_first_token_ms.p95, 'Streams: from arrival to the first content'),
    figure('ttft_p99', 'First token p99', formatMs(total.time_to_first_token_ms.p99), total.time_to_first_token_ms.p99, 'Streams: from arrival to the first content'),
  )

/** Bars of one measure per bucket, as inline SVG. */
const barChart = (title: string, name: string, series: Bucket[], measure: (bucket: Bucket) => number, format: (value: number) => string) => {
  const width = 720
  const height = 160
  const max = Math.max(0, ...series.map(measure))
  const slot = series.length === 0 ? width : width / series.length
  const svg = s('svg', { viewBox: `0 0 ${width} ${height + 20}`, role: 'img', 'aria-label': title, class: 'chart' })
  series.forEach((bucket, index) => {
    const value = measure(bucket)
    const barHeight = max === 0 ? 0 : Math.max(value > 0 ? 1 : 0, (value / max) * height)
    svg.append(
      s(
        'rect',
        { x: (index * slot + slot * 0.1).toFixed(2), y: (height - barHeight).toFixed(2), width: (slot * 0.8).toFixed(2), height: barHeight.toFixed(2), class: 'bar' },
        s('title', {}, `${formatTime(bucket.start)}: ${format(value)}`),
      ),
    )
  })
  svg.append(s('line', { x1: 0, y1: height, x2: width, y2: height, class: 'axis' }))
  const first = series[0]
  const last = series.at(-1)
  if (first) svg.append(s('text', { x: 0, y: height + 15, class: 'tick' }, formatTime(first.start)))
  if (last && last !== first) svg.append(s('text', { x: width, y: height + 15, class: 'tick', 'text-anchor': 'end' }, formatTime(last.start)))
  return h('figure', { class: 'chart-box', 'data-chart': name }, h('figcaption', {}, `${title} (max ${format(max)})`), svg)
}

/** A small line of requests per bucket for one group's row. */
const sparkline = (series: Bucket[], starts: string[]) => {
  const byStart = new Map(series.map((bucket) => [bucket.start, bucket.requests]))
  const values = starts.map((start) => byStart.get(start) ?? 0)
  const max = Math.max(1, ...values)
  const step = values.length > 1 ? 100 / (values.length - 1) : 0
  const points = values.map((value, index) => `${(index * step).toFixed(2)},${(20 - (value / max) * 18 - 1).toFixed(2)}`).join(' ')
  return s('svg', { viewBox: '0 0 100 20', class: 'spark', 'aria-hidden': 'true', preserveAspectRatio: 'none' }, s('polyline', { points: values.length > 1 ? points : `0,19 100,19` }))
}

const GROUP_TITLES: Record<Group, string> = { key: 'By key', model: 'By model', provider: 'By provider', workspace: 'By workspace' }

const breakdown = (group: Group, stats: Stats, nameOf: (value: string | null) => string) => {
  const starts = stats.total.series.map((bucket) => bucket.start)
  const rows = (stats.groups ?? []).map((row) =>
    h(
      'tr',
      { 'data-group': row.group ?? '' },
      h('th', { scope: 'row' }, nameOf(row.group)),
      h('td', { 'data-col': 'requests' }, formatCount(row.requests)),
      h('td', { 'data-col': 'cost' }, formatUsd(row.cost)),
      h('td', { 'data-col': 'tokens' }, formatCount(row.prompt_tokens + row.completion_tokens)),
      h('td', { 'data-col': 'error_rate' }, formatRate(row.error_rate)),
      h('td', { 'data-col': 'fallback_rate' }, formatRate(row.fallback_rate)),
      h('td', { 'data-col': 'latency_p95' }, formatMs(row.latency_ms.p95)),
      h('td', { class: 'trend' }, sparkline(row.series, starts)),
    ),
  )
  return h(
    'section',
    { class: 'panel', 'data-breakdown': group },
    h('h2', {}, GROUP_TITLES[group]),
    rows.length === 0
      ? h('p', { class: 'empty' }, 'No requests in this range.')
      : h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ...['Name', 'Requests', 'Spend', 'Tokens', 'Errors', 'Fallbacks', 'Latency p95', 'Requests over time'].map((title) => h('th', { scope: 'col' }, title)))),
          h('tbody', {}, ...rows),
        ),
  )
}

const recentTable = (recent: Recent[], keyName: (hash: string) => string) =>
  h(
    'section',
    { class: 'panel', id: 'recent' },
    h('h2', {}, 'Recent generations'),
    recent.length === 0
      ? h('p', { class: 'empty' }, 'No requests in this range.')
      : h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ...['Time', 'Model', 'Provider', 'Key', 'Status', 'Spend', 'Tokens', 'Latency', 'Details'].map((title) => h('th', { scope: 'col' }, title)))),
          h(
            'tbody',
            {},
            ...recent.map((item) =>
              h(
                'tr',
                { 'data-generation': item.id },
                h('td', {}, formatTime(item.created_at)),
                h('td', {}, item.model),
                h('td', {}, item.provider ?? '–'),
                h('td', {}, keyName(item.key_hash)),
                h('td', { class: `status status-${item.status === 'failed' ? 'failed' : 'ok'}` }, item.is_fallback ? `${item.status} (fallback)` : item.status),
                h('td', {}, formatUsd(item.cost)),
                h('td', {}, formatCount(item.prompt_tokens + item.completion_tokens)),
                h('td', {}, formatMs(item.latency_ms)),
                h('td', {}, h('a', { href: `#generation=${encodeURIComponent(item.id)}` }, 'Details')),
              ),
            ),
          ),
        ),
  )

const limitShare = (key: ApiKey) => (key.limit === null || key.limit <= 0 ? 0 : (key.limit - (key.limit_remaining ?? 0)) / key.limit)

const nearLimits = (keys: ApiKey[]) => {
  const near = keys.filter((key) => key.limit !== null && limitShare(key) >= NEAR_LIMIT).sort((a, b) => limitShare(b) - limitShare(a))
  return h(
    'section',
    { class: 'panel', id: 'limits' },
    h('h2', {}, 'Keys near their limits'),
    near.length === 0
      ? h('p', { class: 'empty' }, `No key has used ${formatRate(NEAR_LIMIT)} or more of its limit.`)
      : h(
          'table',
          {},
          h('thead', {}, h('tr', {}, ...['Key', 'Used', 'Limit', 'Remaining', 'Resets', ''].map((title) => h('th', { scope: 'col' }, title)))),
          h(
            'tbody',
            {},
            ...near.map((key) =>
              h(
                'tr',
                { 'data-key': key.hash },
                h('th', { scope: 'row' }, key.name || key.label),
                h('td', {}, formatRate(limitShare(key))),
                h('td', {}, formatUsd(key.limit ?? 0)),
                h('td', {}, formatUsd(key.limit_remaining ?? 0)),
                h('td', {}, key.limit_reset ?? 'never'),
                h('td', {}, h('meter', { min: '0', max: '1', low: String(NEAR_LIMIT), high: '0.95', optimum: '0', value: String(Math.min(1, limitShare(key))) })),
              ),
            ),
          ),
        ),
  )
}

const toolbar = (stats: Stats) => {
  const select = h('select', { id: 'range', 'aria-label': 'Range' }, ...RANGES.map((range, index) => h('option', { value: String(index), ...(index === rangeIndex ? { selected: '' } : {}) }, range.label))) as HTMLSelectElement
  select.addEventListener('change', () => {
    rangeIndex = Number(select.value)
    void load()
  })
  const refresh = h('button', { type: 'button', id: 'refresh' }, 'Refresh')
  refresh.addEventListener('click', () => void load())
  const signOut = h('button', { type: 'button', id: 'sign-out' }, 'Sign out')
  signOut.addEventListener('click', () => {
    sessionStorage.removeItem(KEY_STORAGE)
    renderSignIn()
  })
  return h(
    'div',
    { class: 'toolbar', id: 'window', 'data-from': stats.from, 'data-to': stats.to, 'data-bucket': stats.bucket },
    select,
    h('span', { class: 'range-text' }, `${formatTime(stats.from)} – ${formatTime(stats.to)}, by ${stats.bucket}`),
    refresh,
    signOut,
  )
}

const detailOf = async (id: string) => {
  const { data } = await api<{ data: Record<string, unknown> & { provider_responses?: Array<Record<string, unknown>> } }>('generation', { id })
  const FIELDS: Array<[string, string]> = [
    ['id', 'Id'],
    ['created_at', 'Created'],
    ['model', 'Model'],
    ['provider_name', 'Provider'],
    ['status', 'Status'],
    ['error_type', 'Error type'],
    ['finish_reason', 'Finish reason'],
    ['streamed', 'Streamed'],
    ['total_cost', 'Spend (USD)'],
    ['tokens_prompt', 'Prompt tokens'],
    ['tokens_completion', 'Completion tokens'],
    ['native_tokens_reasoning', 'Reasoning tokens'],
    ['native_tokens_cached', 'Cached tokens'],
    ['latency', 'Latency (ms)'],
    ['time_to_first_token', 'Time to first token (ms)'],
    ['workspace_id', 'Workspace'],
    ['request_id', 'Request id'],
  ]
  const attempts = data.provider_responses ?? []
  return h(
    'section',
    { class: 'panel', id: 'generation', 'data-id': id },
    h('h2', {}, 'Generation'),
    h('a', { href: '#', class: 'close' }, 'Close'),
    h('dl', {}, ...FIELDS.flatMap(([field, label]) => [h('dt', {}, label), h('dd', { 'data-field': field }, data[field] === null || data[field] === undefined ? '–' : String(data[field]))])),
    h('h3', {}, 'Attempts'),
    h(
      'ol',
      {},
      ...attempts.map((attempt) => h('li', {}, `${String(attempt.provider_name)} (${String(attempt.endpoint_id)}): ${attempt.status === null ? 'client left' : String(attempt.status)}, ${String(attempt.latency)} ms`)),
    ),
  )
}

const showDetail = async () => {
  const match = /^#generation=(.+)$/.exec(location.hash)
  const slot = document.getElementById('detail')
  if (!slot) return
  if (!match) {
    slot.replaceChildren()
    return
  }
  try {
    slot.replaceChildren(await detailOf(decodeURIComponent(match[1]!)))
    slot.scrollIntoView({ block: 'nearest' })
  } catch (error) {
    if (error instanceof SignedOut) return renderSignIn(error.message)
    slot.replaceChildren(h('p', { class: 'notice', role: 'alert' }, (error as Error).message))
  }
}

let loading = 0

const load = async () => {
  const ticket = ++loading
  setState('loading')
  const to = new Date()
  const from = new Date(to.getTime() - RANGES[rangeIndex]!.ms)
  const range = { from: from.toISOString(), to: to.toISOString() }
  try {
    const [byGroup, keys, workspaces] = await Promise.all([
      Promise.all(GROUPS.map((group) => api<{ data: Stats }>('stats', { ...range, group_by: group }))),
      listAll<ApiKey>('keys?include_disabled=true', 100),
      listAll<Workspace>('workspaces', 100),
    ])
    if (ticket !== loading) return
    const keyNames = new Map(keys.map((key) => [key.hash, key.name || key.label]))
    const workspaceNames = new Map(workspaces.map((workspace) => [workspace.id, workspace.name]))
    const names: Record<Group, (value: string | null) => string> = {
      key: (hash) => (hash === null ? '–' : (keyNames.get(hash) ?? `${hash.slice(0, 12)}…`)),
      model: (model) => model ?? '–',
      provider: (provider) => provider ?? 'none (no provider answered)',
      workspace: (id) => (id === null ? '–' : (workspaceNames.get(id) ?? id)),
    }
    const stats = byGroup[0]!.data
    root().replaceChildren(
      toolbar(stats),
      stats.truncated ? h('p', { class: 'notice', role: 'status' }, 'This range holds more records than one answer reads: the figures cover its newest part. Choose a shorter range.') : '',
      summary(stats.total),
      h(
        'section',
        { class: 'charts' },
        barChart('Requests', 'requests', stats.total.series, (bucket) => bucket.requests, formatCount),
        barChart('Spend', 'cost', stats.total.series, (bucket) => bucket.cost, formatUsd),
        barChart('Tokens', 'tokens', stats.total.series, (bucket) => bucket.prompt_tokens + bucket.completion_tokens, formatCount),
        barChart('Errors', 'errors', stats.total.series, (bucket) => bucket.errors, formatCount),
      ),
      h('div', { id: 'detail' }),
      recentTable(stats.recent, names.key),
      nearLimits(keys),
      ...GROUPS.map((group, index) => breakdown(group, byGroup[index]!.data, names[group])),
    )
    setState('ready')
    await showDetail()
  } catch (error) {
    if (ticket !== loading) return
    if (error instanceof SignedOut) {
      sessionStorage.removeItem(KEY_STORAGE)
      return renderSignIn(error.message)
    }
    root().replaceChildren(h('p', { class: 'notice', role: 'alert' }, `Could not load the figures: ${(error as Error).message}`))
    setState('error')
  }
}

window.addEventListener('hashchange', () => void showDetail())
if (storedKey()) void load()
else renderSignIn()
