/**
 * Stored responses through the `openai` SDK (docs/decisions.md, Stored responses): `responses.create` stores the
 * answer, `previous_response_id` continues it (the stored input and output reach the upstream before the new input),
 * `responses.retrieve`, `responses.inputItems.list` and `responses.delete` read and remove it, only from the workspace
 * that stored it; every answer meets the Open Responses schema.
 */

import OpenAI, { NotFoundError } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectOpenResponsesObject, expectOpenResponsesStream } from '../helpers/open-responses'
import { createSdkHarness, FAMILIES, type RunningGateway } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let running: RunningGateway
let client: OpenAI

const MODEL = FAMILIES.openai.model
/** `store` as the answer echoes it (the SDK's Response type does not list it). */
const storeOf = (response: object) => (response as { store?: unknown }).store

const clientFor = (apiKey: string) => new OpenAI({ baseURL: running.url, apiKey, maxRetries: 0 })

beforeAll(async () => {
  await harness.start()
  running = await harness.startGateway({ storedResponses: { sweepIntervalMs: false } })
  client = clientFor(running.key)
})
afterAll(() => harness.close())

describe('stored responses through the openai SDK', () => {
  it('stores by default, continues with previous_response_id, retrieves, lists input items, deletes', async () => {
    const first = await client.responses.create({ model: MODEL, input: 'What is the capital of France?' })
    expect(storeOf(first)).toBe(true)
    expect(first.previous_response_id).toBeNull()
    expectOpenResponsesObject(first)

    const second = await client.responses.create({ model: MODEL, input: 'And its population?', previous_response_id: first.id })
    expect(second.previous_response_id).toBe(first.id)
    expectOpenResponsesObject(second)
    // The upstream got the first turn (its input, then its answer) before the new input.
    const sent = harness.lastRequest('openai').json.input as Array<{ role?: string; type?: string; content: unknown }>
    expect(sent.map((item) => item.role)).toEqual(['user', 'assistant', 'user'])
    expect(JSON.stringify(sent[1]!.content)).toContain(FAMILIES.openai.textPhrase)
    expect(JSON.stringify(sent[2]!.content)).toContain('And its population?')

    const retrieved = await client.responses.retrieve(second.id)
    expect(retrieved).toEqual(JSON.parse(JSON.stringify(second)))

    // Only this response's own input is listed, newest first by default; pages follow `after`.
    const items = await client.responses.inputItems.list(second.id)
    expect(items.data).toHaveLength(1)
    expect(JSON.stringify(items.data[0])).toContain('And its population?')
    const ascending = await client.responses.inputItems.list(first.id, { order: 'asc', limit: 1 })
    expect(ascending.data).toHaveLength(1)
    expect(ascending.has_more).toBe(false)

    await client.responses.delete(first.id)
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(NotFoundError)
    await expect(client.responses.delete(first.id)).rejects.toBeInstanceOf(NotFoundError)
    await expect(client.responses.create({ model: MODEL, input: 'Again?', previous_response_id: first.id })).rejects.toBeInstanceOf(NotFoundError)
  })

  it('streams a stored answer whose final event comes once it is stored; store: false stores nothing', async () => {
    const stream = await client.responses.create({ model: MODEL, input: 'What is the capital of France?', stream: true })
    const events: Array<{ type: string; sequence_number: number; response?: { id: string } }> = []
    for await (const event of stream) events.push(event as never)
    expectOpenResponsesStream(events)
    const final = events.at(-1)!
    expect(final.type).toBe('response.completed')
    expect((await client.responses.retrieve(final.response!.id)).id).toBe(final.response!.id)

    const unstored = await client.responses.create({ model: MODEL, input: 'Not kept', store: false })
    expect(storeOf(unstored)).toBe(false)
    await expect(client.responses.retrieve(unstored.id)).rejects.toBeInstanceOf(NotFoundError)
  })

  it('never shows one workspace a response another stored, and a workspace can turn storing off', async () => {
    const stored = await client.responses.create({ model: MODEL, input: 'Mine' })
    const admin = running.gateway.admin
    const workspace = await admin.createWorkspace(undefined, { name: 'Other', slug: 'other', isResponseStorageEnabled: false })
    const other = clientFor((await admin.createKey({ kind: 'regular', name: 'other', workspaceId: workspace.id })).key)
    await expect(other.responses.retrieve(stored.id)).rejects.toBeInstanceOf(NotFoundError)
    await expect(other.responses.inputItems.list(stored.id)).rejects.toBeInstanceOf(NotFoundError)
    await expect(other.responses.delete(stored.id)).rejects.toBeInstanceOf(NotFoundError)
    await expect(other.responses.create({ model: MODEL, input: 'Theirs?', previous_response_id: stored.id })).rejects.toBeInstanceOf(NotFoundError)
    // Storing off: left out, store is false; asked for, a 400 naming the setting.
    expect(storeOf(await other.responses.create({ model: MODEL, input: 'Hello' }))).toBe(false)
    await expect(other.responses.create({ model: MODEL, input: 'Hello', store: true })).rejects.toThrow(/is_response_storage_enabled/)
    expect((await client.responses.retrieve(stored.id)).id).toBe(stored.id)
  })
})
