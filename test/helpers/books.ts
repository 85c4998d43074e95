/**
 * The books of gateway processes sharing one store, read as their clients and their operator read them: what each
 * answer told its client it cost (`usage.cost`), what the usage ledger recorded (`GET /generation`), and what the
 * spend counters hold (`GET /keys/{hash}`'s `usage`, `GET /credits`' `total_usage`), all in whole nano-dollars so
 * sums compare exactly. The upstream answers with recorded fixtures: Chat Completions on `/chat/completions`,
 * Responses on `/responses`, JSON or SSE as asked.
 */

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'vitest'
import { bodyReader, sseEventsOf } from './interrupted-stream'
import type { RunningProcess } from './process'
import { fixture, type RecordedRequest, type UpstreamReply } from './upstream'

/** Per token: $1.10 per million in, $2.30 per million out (prices whose sums drift in floating point). */
const PRICING = { prompt: 0.0000011, completion: 0.0000023 }

/** A model on a Chat Completions upstream and one on a Responses upstream, both at `PRICING`. */
export const MODELS = ['test/chat', 'test/resp'] as const
export type Model = (typeof MODELS)[number]

/** What each model's recorded answer costs: Chat Completions' 14 tokens in and 13 out, Responses' 19 in and 18 out. */
export const COST_NANO: Record<Model, number> = { 'test/chat': 45_300, 'test/resp': 62_300 }

/**
 * The worst case of a Responses request `{input: 'Hi', max_output_tokens: 100}`: `[null,"Hi",null]` is 16 bytes, so
 * 6 prompt tokens estimated, and 100 out.
 */
export const WORST_NANO = 236_600

/** The API a client calls: `POST /responses` or `POST /chat/completions`. */
export type Api = 'responses' | 'chat'

export interface Question {
  api: Api
  model: Model
  stream: boolean
  /** The output bound (`max_output_tokens` / `max_tokens`), 100 unless told. */
  maxTokens?: number
}

/** Every mix of API, model and streaming. */
export const QUESTIONS: readonly Question[] = (['responses', 'chat'] as const).flatMap((api) =>
  MODELS.flatMap((model) => [false, true].map((stream) => ({ api, model, stream }))),
)

/** A model whose every answer calls `service:datetime` again, so a loop on it runs until its limits stop it. */
export const LOOP_MODEL = 'test/loop'
/** What one turn of `LOOP_MODEL` costs: the recorded tool call's 74 tokens in and 21 out. */
export const LOOP_TURN_NANO = 129_700

/** The recorded Responses tool call, calling `service_datetime` instead of the recorded function. */
const loopTurn = (): UpstreamReply => {
  const answer = JSON.parse(fixture('openai', 'tool-call.json').toString('utf8')) as { output: Array<Record<string, unknown>> }
  answer.output = answer.output.map((item) => ({ ...item, name: 'service_datetime', arguments: '{"timezone":"UTC"}', call_id: `call_${crypto.randomUUID()}` }))
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer) }
}

/** The recorded answer to `request`: the wire format its path names, JSON or SSE as it asked. */
export const fixtureAnswer = (request: RecordedRequest): UpstreamReply => {
  if (request.url.includes('/loop/')) return loopTurn()
  const isStream = request.json?.stream === true
  const body = fixture(request.url.endsWith('/chat/completions') ? 'openai-chat' : 'openai', isStream ? 'text.sse' : 'text.json')
  return { status: 200, headers: { 'content-type': isStream ? 'text/event-stream' : 'application/json' }, body }
}

/** Writes the runner's config file naming the loopback upstream at `upstreamUrl`, with any other `settings`; resolves with its path. */
export const writeBooksConfig = async (directory: string, upstreamUrl: string, settings: Record<string, unknown> = {}) => {
  const path = join(directory, 'config.json')
  const endpoint = (provider: string) => ({ provider, model: `${provider}-model`, contextLength: 8192, pricing: PRICING })
  await writeFile(
    path,
    JSON.stringify({
      providers: {
        chat: { api: 'openai-chat', baseURL: `${upstreamUrl}/v1`, isKeyless: true },
        resp: { api: 'openai-responses', baseURL: `${upstreamUrl}/v1`, isKeyless: true },
        loop: { api: 'openai-responses', baseURL: `${upstreamUrl}/loop/v1`, isKeyless: true },
      },
      models: [
        { slug: 'test/chat', name: 'Chat', endpoints: [endpoint('chat')] },
        { slug: 'test/resp', name: 'Responses', endpoints: [endpoint('resp')] },
        { slug: LOOP_MODEL, name: 'Loop', endpoints: [endpoint('loop')] },
      ],
      ...settings,
    }),
  )
  return path
}

/** USD as the wire carries it → whole nano-dollars. */
export const nanoOf = (usd: number) => Math.round(usd * 1e9)

export const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0)

/** What a client learned from one answer. */
export interface Answer {
  status: number
  /** The generation's id as the answer showed it (also in a stream that broke off), if any. */
  id: string | undefined
  /** What the answer said it cost: a JSON body's, or the usage a stream ended with before `[DONE]`. */
  costNano: number | undefined
  /** The message of the failure a stream ended with, after its content. */
  error: string | undefined
  /** The connection closed before the body's end (a stream broken off). */
  isCut: boolean
  text: string
}

const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete'])

/** The answer's id, its cost and a stream's failure: a whole JSON body, or a stream read to `[DONE]`. */
const readAnswer = (api: Api, isStream: boolean, status: number, text: string, isCut: boolean): Answer => {
  const answer: Answer = { status, id: undefined, costNano: undefined, error: undefined, isCut, text }
  if (status !== 200) return answer
  if (!isStream) {
    if (isCut) return answer
    const body = JSON.parse(text) as { id: string; usage: { cost: number } }
    return { ...answer, id: body.id, costNano: nanoOf(body.usage.cost) }
  }
  const events = sseEventsOf(text).filter((event) => event !== '[DONE]')
  const isWhole = text.trimEnd().endsWith('data: [DONE]')
  if (api === 'chat') {
    const usage = events.find((event) => event.usage?.cost !== undefined)
    const failure = events.find((event) => event.error !== undefined)
    return { ...answer, id: events[0]?.id, costNano: isWhole && usage ? nanoOf(usage.usage.cost) : undefined, error: failure?.error.message }
  }
  const terminal = events.find((event) => TERMINAL.has(event.type))
  return {
    ...answer,
    id: events[0]?.response?.id,
    costNano: isWhole && terminal?.response.usage ? nanoOf(terminal.response.usage.cost) : undefined,
    error: terminal?.response.error?.message,
  }
}

/** What the usage ledger recorded of one generation. */
export interface LedgerRecord {
  costNano: number
  isUsageEstimated: boolean
  status: string
}

/** A client of gateway processes, with the operator's management key for the books. */
export const booksClient = (operatorKey: string) => {
  const call = (gateway: RunningProcess, path: string, key: string, json?: unknown, signal?: AbortSignal) =>
    fetch(`${gateway.url}/api/v1${path}`, {
      method: json === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
      signal,
    })

  const body = ({ api, model, stream, maxTokens = 100 }: Question) =>
    api === 'responses'
      ? { model, input: 'Hi', max_output_tokens: maxTokens, stream }
      : { model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: maxTokens, stream }

  return {
    call,

    /** A regular key, with `limit` in USD if given. */
    async createKey(gateway: RunningProcess, name: string, limit?: number) {
      const response = await call(gateway, '/keys', operatorKey, { name, ...(limit === undefined ? {} : { limit }) })
      expect(response.status).toBe(201)
      const created = (await response.json()) as { key: string; data: { hash: string } }
      return { key: created.key, hash: created.data.hash }
    },

    /** Asks `question` and reads the answer to its end, or to where its connection closed. */
    async ask(gateway: RunningProcess, key: string, question: Question, signal?: AbortSignal): Promise<Answer> {
      const response = await call(gateway, `/${question.api === 'chat' ? 'chat/completions' : 'responses'}`, key, body(question), signal)
      const reader = bodyReader(response.body!)
      let isCut = false
      try {
        await reader.rest()
      } catch (error) {
        // What the client saw when the gateway dropped the connection; a test's own timeout is no such thing.
        if (signal?.aborted) throw error
        isCut = true
      }
      return readAnswer(question.api, question.stream, response.status, reader.seen(), isCut)
    },

    /** Sends `question` and resolves once its answer started (headers in); the body is left to read or cut. */
    open: (gateway: RunningProcess, key: string, question: Question, signal?: AbortSignal) =>
      call(gateway, `/${question.api === 'chat' ? 'chat/completions' : 'responses'}`, key, body(question), signal),

    /** The key's usage in total, as `GET /keys/{hash}` shows it to the operator. */
    async usageNano(gateway: RunningProcess, hash: string) {
      const response = await call(gateway, `/keys/${hash}`, operatorKey)
      expect(response.status).toBe(200)
      return nanoOf(((await response.json()) as { data: { usage: number } }).data.usage)
    },

    /** The account's usage in total, as `GET /credits` shows it. */
    async creditsUsageNano(gateway: RunningProcess) {
      const response = await call(gateway, '/credits', operatorKey)
      expect(response.status).toBe(200)
      return nanoOf(((await response.json()) as { data: { total_usage: number } }).data.total_usage)
    },

    /** What the ledger holds of the key `hash`: its records (`GET /activity`, every retained day) and their costs. */
    async ledgerOfKey(gateway: RunningProcess, hash: string) {
      const response = await call(gateway, `/activity?api_key_hash=${hash}`, operatorKey)
      expect(response.status).toBe(200)
      const { data } = (await response.json()) as { data: Array<{ requests: number; usage: number }> }
      // Each row's usage is its records' costs added in USD and rounded to 1e-12: whole nano-dollars again.
      return { requests: sum(data.map((row) => row.requests)), costNano: sum(data.map((row) => nanoOf(row.usage))) }
    },

    /** The ledger's record of the generation `id`, or undefined while there is none. */
    async record(gateway: RunningProcess, id: string): Promise<LedgerRecord | undefined> {
      const response = await call(gateway, `/generation?id=${encodeURIComponent(id)}`, operatorKey)
      if (response.status === 404) return undefined
      expect(response.status).toBe(200)
      const { data } = (await response.json()) as { data: { total_cost: number; is_usage_estimated: boolean; status: string } }
      return { costNano: nanoOf(data.total_cost), isUsageEstimated: data.is_usage_estimated, status: data.status }
    },
  }
}

/** Runs `task(0)` … `task(total - 1)`, `width` at a time; resolves with their results in order. */
export const inPool = async <T>(total: number, width: number, task: (index: number) => Promise<T>): Promise<T[]> => {
  const results: T[] = new Array(total)
  let next = 0
  const worker = async () => {
    while (next < total) {
      const index = next++
      results[index] = await task(index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, total) }, worker))
  return results
}
