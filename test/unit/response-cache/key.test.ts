/**
 * The response cache's key (src/features/response-cache/key.ts) and its one rule of what may be cached
 * (cacheable.ts): every field that changes an answer changes the key, the fields that only describe the caller or
 * the delivery do not, and the workspace is always part of it.
 */

import { describe, expect, it } from 'vitest'
import type { InferenceRequest } from '../../../src/engine/request'
import { uncacheableReason } from '../../../src/features/response-cache/cacheable'
import { canonicalJson, responseCacheKey } from '../../../src/features/response-cache/key'

const attempt = (slug: string, provider: string) => ({ model: { slug }, endpoint: { provider }, provider: { id: provider }, credential: null })

/** A prepared request with only what the key and the rule read. */
const request = (change: { body?: Record<string, unknown>; workspace?: string; attempts?: unknown[]; rest?: Record<string, unknown> } = {}): InferenceRequest =>
  ({
    body: { model: 'openai/gpt-4.1-mini', input: 'What is the capital of France?', temperature: 0.2, ...change.body },
    attempts: change.attempts ?? [attempt('openai/gpt-4.1-mini', 'openai')],
    requestedModel: 'openai/gpt-4.1-mini',
    spend: { workspace: { id: change.workspace ?? 'ws-1' }, key: {}, account: {} },
    plugins: [],
    pipeline: [],
    attemptReports: [],
    ...change.rest,
  }) as unknown as InferenceRequest

const keyOf = (change?: Parameters<typeof request>[0]) => responseCacheKey(request(change))

describe('canonicalJson', () => {
  it('writes equal values as equal text whatever the order of their keys, and leaves undefined members out', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(canonicalJson({ a: { d: [1, { x: 1, y: 2 }] }, b: 1 }))
    expect(canonicalJson({ a: [1, 2] })).not.toBe(canonicalJson({ a: [2, 1] }))
  })
})

describe('responseCacheKey', () => {
  it('is a SHA-256 in hex, the same for the same request', async () => {
    expect(await keyOf()).toMatch(/^[0-9a-f]{64}$/)
    expect(await keyOf()).toBe(await keyOf())
  })

  it.each([
    ['the input', { body: { input: 'What is the capital of Spain?' } }],
    ['the instructions', { body: { instructions: 'Answer in French.' } }],
    ['a sampling setting', { body: { temperature: 0.9 } }],
    ['the output bound', { body: { max_output_tokens: 64 } }],
    ['the tools', { body: { tools: [{ type: 'function', name: 'get_weather', parameters: {} }] } }],
    ['the format', { body: { text: { format: { type: 'json_object' } } } }],
    ['the reasoning', { body: { reasoning: { effort: 'high' } } }],
    ['the provider preferences', { body: { provider: { order: ['azure'] } } }],
    ['the models routing chose', { attempts: [attempt('anthropic/claude-sonnet-4', 'anthropic')] }],
    ['the workspace', { workspace: 'ws-2' }],
    ['a route extension', { rest: { extensions: { stop: ['END'] } } }],
  ])('changes with %s', async (_name, change) => {
    expect(await keyOf(change)).not.toBe(await keyOf())
  })

  it.each([
    ['the user', { body: { user: 'someone' } }],
    ['the safety identifier', { body: { safety_identifier: 'someone' } }],
    ['the session', { body: { session_id: 'session-1' } }],
    ['the metadata', { body: { metadata: { ticket: '42' } } }],
    ['the trace', { body: { trace: { trace_id: 't' } } }],
    ['streaming', { body: { stream: true } }],
    ['the preset name', { body: { preset: 'support' } }],
    ['the prompt cache key', { body: { prompt_cache_key: 'abc' } }],
    ['the request id', { rest: { requestId: 'req-2' } }],
    ['another endpoint of the same model', { attempts: [attempt('openai/gpt-4.1-mini', 'azure')] }],
  ])('does not change with %s', async (_name, change) => {
    expect(await keyOf(change)).toBe(await keyOf())
  })
})

describe('uncacheableReason', () => {
  it('lets a plain request, and one with function tools, be cached', () => {
    expect(uncacheableReason(request())).toBeNull()
    expect(uncacheableReason(request({ body: { tools: [{ type: 'function', name: 'f' }] } }))).toBeNull()
  })

  it.each([
    ['background', { body: { background: true } }, 'background'],
    ['an echo of the upstream body', { body: { debug: { echo_upstream_body: true } } }, 'debug'],
    ['server tools', { rest: { serverTools: { byItemType: new Map() } } }, 'server tools'],
    ['a tool the provider runs', { body: { tools: [{ type: 'web_search_preview' }] } }, 'provider-run tools'],
    ['the web plugin', { rest: { plugins: [{ id: 'web' }] } }, 'web plugin'],
    ['the web-fetch plugin', { rest: { plugins: [{ id: 'web-fetch' }] } }, 'web plugin'],
  ])('refuses %s', (_name, change, reason) => {
    expect(uncacheableReason(request(change))).toBe(reason)
  })
})
