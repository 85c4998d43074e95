/**
 * The usage ledger through OpenRouter's own SDK (`@openrouter/sdk`) on a real node:http server:
 * `generations.getGeneration` and `analytics.getUserActivity` parse our answers with their zod schemas (a
 * missing required field or a wrong type throws), and the typed results carry what the answers cost.
 */

import { OpenRouter } from '@openrouter/sdk'
import { NotFoundResponseError } from '@openrouter/sdk/models/errors'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES, type RunningGateway } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let running: RunningGateway
let client: OpenRouter
let management: OpenRouter
let managementKeyHash: string

const clientFor = (apiKey: string) => new OpenRouter({ serverURL: running.url, apiKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })

beforeAll(async () => {
  await harness.start()
  running = await harness.startGateway()
  client = clientFor(running.key)
  const created = await running.gateway.admin.createKey({ kind: 'management', name: 'analytics' })
  managementKeyHash = created.record.hash
  management = clientFor(created.key)
})

afterAll(() => harness.close())

const QUESTION = 'What is the capital of France?'
const today = () => new Date().toISOString().slice(0, 10)

describe('@openrouter/sdk over the usage ledger', () => {
  const costs: number[] = []

  it('generations.getGeneration reads a whole Responses answer, typed, with the cost the answer carried', async () => {
    const family = FAMILIES.openai
    const answer = await client.responses.send({ responsesRequest: { model: family.model, input: QUESTION, stream: false } })
    if (Symbol.asyncIterator in answer) throw new Error('expected a Response object, got a stream')
    const cost = answer.usage?.cost ?? 0
    expect(cost).toBeGreaterThan(0)
    costs.push(cost)
    const { data } = await client.generations.getGeneration({ id: answer.id })
    expect(data).toMatchObject({
      id: answer.id,
      model: family.model,
      providerName: 'OpenAI',
      apiType: 'completions',
      isByok: false,
      streamed: false,
      cancelled: false,
      finishReason: 'stop',
      totalCost: cost,
      usage: cost,
      upstreamInferenceCost: null,
      tokensPrompt: answer.usage?.inputTokens,
      tokensCompletion: answer.usage?.outputTokens,
    })
    expect(data.providerResponses).toEqual([expect.objectContaining({ providerName: 'OpenAI', status: 200, isByok: false })])
    expect(Date.parse(data.createdAt)).not.toBeNaN()
    expect(data.latency).toBeGreaterThanOrEqual(0)
  })

  it('generations.getGeneration reads a streamed chat completion by its gen- id', async () => {
    const family = FAMILIES.anthropic
    const result = await client.chat.send({ chatRequest: { model: family.model, messages: [{ role: 'user', content: QUESTION }], stream: true } })
    if (!(Symbol.asyncIterator in result)) throw new Error('expected a stream, got a chat result')
    let id = ''
    let cost = 0
    for await (const chunk of result) {
      id = chunk.id
      cost = chunk.usage?.cost ?? cost
    }
    expect(id).toMatch(/^gen-/)
    costs.push(cost)
    const { data } = await client.generations.getGeneration({ id })
    expect(data).toMatchObject({ id, model: family.model, providerName: 'Anthropic', streamed: true, totalCost: cost, finishReason: 'stop' })
  })

  it('generations.getGeneration answers 404 for an id it does not know', async () => {
    await expect(client.generations.getGeneration({ id: 'gen-00000000000000000000000000000000000000000000000000' })).rejects.toBeInstanceOf(NotFoundResponseError)
  })

  it('analytics.getUserActivity sums the day per model and endpoint, typed', async () => {
    const { data } = await management.analytics.getUserActivity({ date: today() })
    expect(data.map((item) => item.model).sort()).toEqual([FAMILIES.anthropic.model, FAMILIES.openai.model])
    const total = data.reduce((sum, item) => sum + item.usage, 0)
    expect(total).toBeCloseTo(costs[0]! + costs[1]!, 12)
    for (const item of data) {
      expect(item).toMatchObject({ date: today(), requests: 1, byokUsageInference: 0 })
      expect(item.promptTokens).toBeGreaterThan(0)
      expect(item.endpointId).toEqual(expect.any(String))
      expect(item.workspaceId).toBeUndefined()
    }
    const byWorkspace = await management.analytics.getUserActivity({ groupBy: 'workspace' })
    expect(byWorkspace.data.every((item) => typeof item.workspaceId === 'string')).toBe(true)
    // The management key ran nothing itself.
    expect((await management.analytics.getUserActivity({ apiKeyHash: managementKeyHash })).data).toEqual([])
  })
})
