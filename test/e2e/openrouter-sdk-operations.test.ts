/**
 * The standing check of OpenRouter's own SDK (`@openrouter/sdk`) against the gateway: every operation
 * modelgate serves, called through the SDK over a real node:http server on loopback (upstreams are
 * loopback fixtures), each answer parsed by the SDK's zod schemas and its typed result asserted. An
 * operation that fails here is a gateway bug: fix the gateway, not the test.
 */

import { OpenRouter } from '@openrouter/sdk'
import type { StreamEvents } from '@openrouter/sdk/models'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BUILT_IN_MODELS } from '../../src/engine/models'
import { createSdkHarness, FAMILIES, replyFor, type RunningGateway } from '../helpers/sdk-gateway'
import { jsonFixture, sseFixture, type RecordedRequest } from '../helpers/upstream'

const harness = createSdkHarness()
let running: RunningGateway
/** A regular key: it runs models. */
let regular: OpenRouter
/** A management key: it administers. */
let management: OpenRouter
let managementKey: string

const clientFor = (apiKey: string) => new OpenRouter({ serverURL: running.url, apiKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })

/** The intern's turns (they offer the pause tool) answer with plain text; embeddings with the embeddings fixture. */
const openAIUpstream = (request: RecordedRequest) => {
  if (request.url === '/embeddings') return jsonFixture('openai', 'embeddings.json')
  const isInternTurn = Array.isArray(request.json?.tools) && request.json.tools.some((tool: { name?: string }) => tool.name === 'service_provide_input')
  if (isInternTurn) return request.json.stream === true ? sseFixture('openai', 'text.sse') : jsonFixture('openai', 'text.json')
  return replyFor(FAMILIES.openai, request)
}

beforeAll(async () => {
  await harness.start()
  harness.overrides.openai = openAIUpstream
  running = await harness.startGateway()
  await running.gateway.admin.setAccountFlags(undefined, { interns: true })
  managementKey = (await running.gateway.admin.createKey({ kind: 'management', name: 'sdk operations' })).key
  regular = clientFor(running.key)
  management = clientFor(managementKey)
})

afterAll(() => harness.close())

const MODEL = FAMILIES.openai.model
const QUESTION = 'What is the capital of France?'

const collect = async <T>(stream: AsyncIterable<T>): Promise<T[]> => {
  const items: T[] = []
  for await (const item of stream) items.push(item)
  return items
}

describe('apiKeys', () => {
  it('create, list, get, update, delete and getCurrentKeyMetadata', async () => {
    const created = await management.apiKeys.create({ requestBody: { name: 'Operations', limit: 10, limitReset: 'weekly' } })
    expect(created.key).toMatch(/^mg-v1-/)
    expect(created.data).toMatchObject({ name: 'Operations', limit: 10, limitReset: 'weekly', disabled: false })
    const { hash } = created.data
    expect((await management.apiKeys.list()).data.map((key) => key.hash)).toContain(hash)
    expect((await management.apiKeys.get({ hash })).data.name).toBe('Operations')
    expect((await management.apiKeys.update({ hash, requestBody: { name: 'Renamed', disabled: true } })).data).toMatchObject({ name: 'Renamed', disabled: true })
    expect(await management.apiKeys.delete({ hash })).toEqual({ deleted: true })
    const current = await regular.apiKeys.getCurrentKeyMetadata()
    expect(current.data).toMatchObject({ isManagementKey: false, label: expect.stringMatching(/^mg-v1-/) })
  })
})

describe('byok', () => {
  it('create (documented exception: 200, where the SDK expects 201), list, get, update, delete', async () => {
    // docs/decisions.md, BYOK: the spec's 200 wins over OpenRouter's 201, so the SDK reports an unexpected status…
    await expect(management.byok.create({ createBYOKKeyRequest: { provider: 'anthropic', key: 'sk-ant-byok-0123456789abcdef', name: 'Team key' } })).rejects.toMatchObject({ statusCode: 200 })
    // …though the credential was stored, as the rest of the area shows.
    const listed = await collect(await management.byok.list())
    const credential = listed.flatMap((page) => page.result.data).find((item) => item.name === 'Team key')!
    expect(credential).toMatchObject({ provider: 'anthropic', name: 'Team key' })
    expect((await management.byok.get({ id: credential.id })).data.id).toBe(credential.id)
    expect((await management.byok.update({ id: credential.id, updateBYOKKeyRequest: { name: 'Renamed key' } })).data.name).toBe('Renamed key')
    expect((await management.byok.delete({ id: credential.id })).deleted).toBe(true)
  })
})

describe('chat, responses, callModel', () => {
  it('chat.send answers JSON and streams', async () => {
    const whole = await regular.chat.send({ chatRequest: { model: MODEL, messages: [{ role: 'user', content: QUESTION }], stream: false } })
    if (Symbol.asyncIterator in whole) throw new Error('expected a chat result, got a stream')
    expect(whole.choices[0]!.message.content).toContain(FAMILIES.openai.textPhrase)
    const streamed = await regular.chat.send({ chatRequest: { model: MODEL, messages: [{ role: 'user', content: QUESTION }], stream: true } })
    if (!(Symbol.asyncIterator in streamed)) throw new Error('expected a stream, got a chat result')
    const chunks = await collect(streamed)
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toContain(FAMILIES.openai.textPhrase)
  })

  it('responses.send answers JSON and streams, no event downgraded to an unknown type', async () => {
    const whole = await regular.responses.send({ responsesRequest: { model: MODEL, input: QUESTION, stream: false } })
    if (Symbol.asyncIterator in whole) throw new Error('expected a Response object, got a stream')
    expect(whole).toMatchObject({ status: 'completed', model: MODEL })
    const streamed = await regular.responses.send({ responsesRequest: { model: MODEL, input: QUESTION, stream: true } })
    if (!(Symbol.asyncIterator in streamed)) throw new Error('expected a stream, got a Response object')
    const events: StreamEvents[] = await collect(streamed)
    expect(events.flatMap((event) => ('isUnknown' in event && event.isUnknown ? [event.raw] : []))).toEqual([])
    expect(events.at(-1)?.type).toBe('response.completed')
  })

  it('callModel(...).getText()', async () => {
    expect(await regular.callModel({ model: MODEL, input: QUESTION }).getText()).toContain(FAMILIES.openai.textPhrase)
  })
})

describe('credits, generations, analytics', () => {
  it('credits.getCredits, generations.getGeneration and analytics.getUserActivity', async () => {
    const answer = await regular.responses.send({ responsesRequest: { model: MODEL, input: QUESTION, stream: false } })
    if (Symbol.asyncIterator in answer) throw new Error('expected a Response object, got a stream')
    const credits = await management.credits.getCredits()
    expect(credits.data.totalUsage).toBeGreaterThan(0)
    const { data } = await regular.generations.getGeneration({ id: answer.id })
    expect(data).toMatchObject({ model: MODEL, providerName: 'OpenAI', apiType: 'completions' })
    const activity = await management.analytics.getUserActivity()
    expect(activity.data.some((row) => row.model === MODEL && row.requests > 0)).toBe(true)
  })

  it('generations.listGenerationContent reads what a generation said once private logging is on', async () => {
    const workspace = (await collect(await management.workspaces.list())).flatMap((page) => page.result.data).find((item) => item.slug === 'default')!
    await management.workspaces.update({ id: workspace.id, updateWorkspaceRequest: { isObservabilityIoLoggingEnabled: true } })
    try {
      const answer = await regular.responses.send({ responsesRequest: { model: MODEL, instructions: 'Answer briefly.', input: QUESTION, stream: false } })
      if (Symbol.asyncIterator in answer) throw new Error('expected a Response object, got a stream')
      const { data } = await regular.generations.listGenerationContent({ id: answer.id })
      expect(data.input).toEqual({ messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: QUESTION }] })
      expect(data.output.completion).toContain(FAMILIES.openai.textPhrase)
      expect(data.error).toBeNull()
    } finally {
      await management.workspaces.update({ id: workspace.id, updateWorkspaceRequest: { isObservabilityIoLoggingEnabled: false } })
    }
  })
})

describe('embeddings', () => {
  it('embeddings.generate and listModels through @openrouter/sdk', async () => {
    const result = await regular.embeddings.generate({ requestBody: { model: 'openai/text-embedding-3-small', input: ['Hello', 'World'], dimensions: 8 } })
    if (typeof result === 'string') throw new Error('expected an embeddings object, got text')
    expect(result).toMatchObject({ object: 'list', model: 'openai/text-embedding-3-small', usage: { promptTokens: 11, totalTokens: 11, cost: 2.2e-7, isByok: false } })
    expect(result.data.map((item) => (item.embedding as number[]).length)).toEqual([8, 8])
    const generation = await regular.generations.getGeneration({ id: result.id! })
    expect(generation.data).toMatchObject({ apiType: 'embeddings', model: 'openai/text-embedding-3-small', tokensPrompt: expect.any(Number) })

    const pages = await collect(await regular.embeddings.listModels())
    const ids = pages.flatMap((page) => page.result.data.map((model) => model.id))
    expect(ids).toEqual(BUILT_IN_MODELS.filter((entry) => entry.outputModalities?.includes('embeddings')).map((entry) => entry.slug))
  })

  it('the openai SDK\'s embeddings.create, floats and base64', async () => {
    const openai = new OpenAI({ baseURL: running.url, apiKey: running.key, maxRetries: 0 })
    const floats = await openai.embeddings.create({ model: 'openai/text-embedding-3-small', input: ['Hello', 'World'], encoding_format: 'float' })
    expect(floats.data[0]!.embedding).toHaveLength(8)
    expect(floats.usage.prompt_tokens).toBe(11)
    // Without encoding_format the SDK asks for base64 and decodes it itself: the same floats, as float32.
    const decoded = await openai.embeddings.create({ model: 'openai/text-embedding-3-small', input: ['Hello', 'World'] })
    expect(decoded.data[1]!.embedding).toEqual(floats.data[1]!.embedding.map((value) => Math.fround(value)))
  })
})

describe('catalog: models, endpoints, providers, images', () => {
  it('models.list, get, count and listForUser', async () => {
    const listed = await regular.models.list()
    expect(listed.result.data.length).toBeGreaterThan(50)
    const model = await regular.models.get({ author: 'openai', slug: 'gpt-4.1-mini' })
    expect(model.data).toMatchObject({ id: MODEL, contextLength: 1_047_576 })
    const count = await regular.models.count()
    expect(count.data.count).toBe(listed.result.totalCount)
    // The harness's gateway has shared keys for OpenAI, Anthropic, Google, Groq and DeepSeek only.
    const pages = await collect(await regular.models.listForUser({ bearer: running.key }))
    const usable = pages.flatMap((page) => page.result.data.map((entry) => entry.id))
    expect(usable).toContain(MODEL)
    expect(usable).not.toContain('x-ai/grok-4')
  })

  it('endpoints.list and listZdrEndpoints, providers.list, images.listModels', async () => {
    expect((await regular.endpoints.list({ author: 'openai', slug: 'gpt-4.1-mini' })).data.endpoints[0]).toMatchObject({ tag: 'openai', providerName: 'OpenAI' })
    // No built-in endpoint is marked zero-data-retention: an empty, well-formed list.
    expect((await regular.endpoints.listZdrEndpoints()).data).toEqual([])
    expect((await regular.providers.list()).data.map((provider) => provider.slug)).toContain('openai')
    const images = await regular.images.listModels()
    expect(images.data.map((entry) => entry.id)).toContain('google/gemini-2.5-flash-image')
    expect(images.data[0]!.supportedParameters.modalities).toEqual({ type: 'enum', values: expect.arrayContaining(['image']) })
  })
})

describe('workspaces and budgets', () => {
  it('create, get, list, update, getBudget, setBudget, listBudgets, deleteBudget, delete', async () => {
    const created = await management.workspaces.create({ createWorkspaceRequest: { name: 'Research', slug: 'research' } })
    const id = created.data.id
    expect((await management.workspaces.get({ id })).data.slug).toBe('research')
    const pages = await collect(await management.workspaces.list())
    expect(pages.flatMap((page) => page.result.data.map((workspace) => workspace.slug))).toEqual(expect.arrayContaining(['default', 'research']))
    expect((await management.workspaces.update({ id, updateWorkspaceRequest: { name: 'Research team' } })).data.name).toBe('Research team')

    const set = await management.workspaces.setBudget({ workspaceRef: id, interval: 'monthly', upsertWorkspaceBudgetRequest: { limitUsd: 25, includeByokInBudgets: true } })
    expect(set).toMatchObject({ data: { workspaceId: id, limitUsd: 25, resetInterval: 'monthly' }, includeByokInBudgets: true })
    expect((await management.workspaces.getBudget({ workspaceRef: 'research', interval: 'monthly' })).data.id).toBe(set.data.id)
    await management.workspaces.setBudget({ workspaceRef: id, interval: 'lifetime', upsertWorkspaceBudgetRequest: { limitUsd: 100 } })
    const budgets = await management.workspaces.listBudgets({ workspaceRef: id })
    expect(budgets.data.map((budget) => budget.resetInterval)).toEqual(['monthly', null])
    expect(await management.workspaces.deleteBudget({ workspaceRef: id, interval: 'monthly' })).toEqual({ deleted: true })
    await expect(management.workspaces.getBudget({ workspaceRef: id, interval: 'monthly' })).rejects.toMatchObject({ statusCode: 404 })

    // `apiKeys.list`'s workspace filter is applied, not ignored: only the key bound to this workspace.
    const bound = await management.apiKeys.create({ requestBody: { name: 'Research key', workspaceId: id } })
    expect((await management.apiKeys.list({ workspaceId: id })).data.map((key) => key.hash)).toEqual([bound.data.hash])
    expect(await management.apiKeys.delete({ hash: bound.data.hash })).toEqual({ deleted: true })

    // The confirmation OpenRouter requires for the default workspace changes nothing for another one.
    expect((await management.workspaces.delete({ id, confirmDefaultWorkspaceDeletion: true })).deleted).toBe(true)
  })
})

describe('interns', () => {
  const waitUntilRunning = async (internId: string) => {
    for (let attempt = 0; attempt < 200; attempt++) {
      const intern = await regular.interns.getIntern({ internId })
      if (intern.status === 'running') return intern
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
    throw new Error('the intern never ran')
  }

  it('createIntern, getIntern, listInterns, updateIntern, provisionIntern, chat, suspendIntern, deleteIntern', async () => {
    // The SDK's create sends no model (the workspace default applies): the update sets it.
    const created = await regular.interns.createIntern({ createInternRequest: { name: 'opsy', instructions: 'Answer briefly.' } })
    expect(created).toMatchObject({ name: 'opsy', status: 'stopped', model: null })
    expect((await regular.interns.getIntern({ internId: created.id })).id).toBe(created.id)
    expect((await regular.interns.listInterns()).data.map((intern) => intern.id)).toContain(created.id)
    expect(await regular.interns.updateIntern({ internId: created.id, updateInternRequest: { description: 'Operations', model: MODEL } })).toMatchObject({ description: 'Operations', model: MODEL })
    expect(await regular.interns.provisionIntern({ internId: created.id })).toEqual({ provisioning: true })
    await waitUntilRunning(created.id)

    const result = await regular.interns.chat({ internId: created.id, internChatCompletionRequest: { stream: true, messages: [{ role: 'user', content: QUESTION }] } })
    if (!(Symbol.asyncIterator in result.result)) throw new Error('expected a stream, got a steered answer')
    const chunks = await collect(result.result)
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toContain(FAMILIES.openai.textPhrase)
    expect(chunks.at(-2)!.choices[0]!.finishReason).toBe('stop')
    expect(chunks.at(-1)).toMatchObject({ choices: [], sessionId: expect.stringMatching(/^session-/), usage: { promptTokens: expect.any(Number) } })

    expect(await regular.interns.suspendIntern({ internId: created.id })).toEqual({ suspended: true })
    expect(await regular.interns.deleteIntern({ internId: created.id, deleteInternRequest: {} })).toEqual({ deleting: true })
  })
})

describe('presets', () => {
  it('createPresetsResponses, createPresetsChatCompletions, createPresetsMessages, get, list, listVersions, getVersion, and a request through one', async () => {
    const fromResponses = await regular.presets.createPresetsResponses({
      slug: 'ops-brief',
      responsesRequest: { model: MODEL, input: QUESTION, instructions: 'Answer in one sentence.', temperature: 0.3 },
    })
    expect(fromResponses.data).toMatchObject({ slug: 'ops-brief', status: 'active', designatedVersion: { version: 1, config: { model: MODEL, temperature: 0.3 }, systemPrompt: 'Answer in one sentence.' } })
    const fromChat = await regular.presets.createPresetsChatCompletions({
      slug: 'ops-brief',
      chatRequest: { model: MODEL, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: QUESTION }], maxTokens: 64 },
    })
    expect(fromChat.data.designatedVersion).toMatchObject({ version: 2, config: { model: MODEL, max_output_tokens: 64 }, systemPrompt: 'Be brief.' })
    const fromMessages = await regular.presets.createPresetsMessages({
      slug: 'ops-claude',
      messagesRequest: { model: FAMILIES.anthropic.model, maxTokens: 256, system: 'Be kind.', messages: [{ role: 'user', content: QUESTION }] },
    })
    expect(fromMessages.data.designatedVersion).toMatchObject({ version: 1, config: { model: FAMILIES.anthropic.model, max_output_tokens: 256 }, systemPrompt: 'Be kind.' })
    // A preset holds settings: saved from a Responses body without input.
    const settingsOnly = await regular.presets.createPresetsResponses({ slug: 'ops-settings', responsesRequest: { model: MODEL, temperature: 0.2 } })
    expect(settingsOnly.data.designatedVersion).toMatchObject({ version: 1, config: { model: MODEL, temperature: 0.2 }, systemPrompt: null })

    expect((await regular.presets.get({ slug: 'ops-brief' })).data.designatedVersion?.version).toBe(2)
    const listed = await collect(await regular.presets.list())
    expect(listed.flatMap((page) => page.result.data.map((preset) => preset.slug))).toEqual(['ops-settings', 'ops-claude', 'ops-brief'])
    const versions = await collect(await regular.presets.listVersions({ slug: 'ops-brief' }))
    expect(versions.flatMap((page) => page.result.data.map((version) => version?.version))).toEqual([1, 2])
    expect((await regular.presets.getVersion({ slug: 'ops-brief', version: '1' })).data?.systemPrompt).toBe('Answer in one sentence.')

    // A request through the preset: its instructions and model reach the upstream.
    const answer = await regular.responses.send({ responsesRequest: { model: '@preset/ops-brief', input: QUESTION, stream: false } })
    if (Symbol.asyncIterator in answer) throw new Error('expected a Response object, got a stream')
    expect(answer.model).toBe(MODEL)
    expect(harness.lastRequest('openai').json).toMatchObject({ instructions: 'Be brief.', max_output_tokens: 64 })
  })
})

// Guardrails: operations being built by another helper; their calls join this file when the routes exist.
describe('guardrails', () => {
  it('create, list, get, update, bulkAssignKeys, listGuardrailKeyAssignments, listKeyAssignments, bulkUnassignKeys, delete', async () => {
    const items = <T>(pages: Array<{ result: { data: T[] } }>): T[] => pages.flatMap((page) => page.result.data)
    const created = await management.guardrails.create({ createGuardrailRequest: { name: 'Operations', allowedProviders: ['openai'] } })
    const { id } = created.data
    expect(created.data).toMatchObject({ name: 'Operations', allowedProviders: ['openai'] })
    expect(items(await collect(await management.guardrails.list())).map((guardrail) => guardrail.id)).toContain(id)
    expect((await management.guardrails.get({ id })).data.name).toBe('Operations')
    expect((await management.guardrails.update({ id, updateGuardrailRequest: { name: 'Operations v2', limitUsd: 5, resetInterval: 'monthly' } })).data).toMatchObject({
      name: 'Operations v2',
      limitUsd: 5,
      resetInterval: 'monthly',
    })
    // A new limit alone keeps the stored period; clearing it clears the budget.
    expect((await management.guardrails.update({ id, updateGuardrailRequest: { limitUsd: 8 } })).data).toMatchObject({ limitUsd: 8, resetInterval: 'monthly' })
    expect((await management.guardrails.update({ id, updateGuardrailRequest: { limitUsd: null } })).data).toMatchObject({ limitUsd: null, resetInterval: null })
    const { data: keyData } = await management.apiKeys.create({ requestBody: { name: 'Guarded' } })
    expect((await management.guardrails.bulkAssignKeys({ id, bulkAssignKeysRequest: { keyHashes: [keyData.hash] } })).assignedCount).toBe(1)
    expect(items(await collect(await management.guardrails.listGuardrailKeyAssignments({ id }))).map((assignment) => assignment.keyHash)).toEqual([keyData.hash])
    expect(items(await collect(await management.guardrails.listKeyAssignments())).map((assignment) => assignment.keyHash)).toContain(keyData.hash)
    expect((await management.guardrails.bulkUnassignKeys({ id, bulkUnassignKeysRequest: { keyHashes: [keyData.hash] } })).unassignedCount).toBe(1)
    expect((await management.guardrails.delete({ id })).deleted).toBe(true)
    await management.apiKeys.delete({ hash: keyData.hash })
  })
})
