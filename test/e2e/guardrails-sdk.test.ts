/**
 * Guardrails as OpenRouter's own SDK (`@openrouter/sdk`, whose zod schemas reject an answer of the wrong shape)
 * manages them, enforced on a request made through the `openai` SDK, over a real node:http server.
 */

import { OpenRouter } from '@openrouter/sdk'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let url: string
let management: OpenRouter
let gatewayAdmin: Awaited<ReturnType<typeof harness.startGateway>>['gateway']

const client = (apiKey: string) => new OpenRouter({ serverURL: url, apiKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })
const openai = (apiKey: string) => new OpenAI({ baseURL: url, apiKey, maxRetries: 0, timeout: 30_000 })

beforeAll(async () => {
  await harness.start()
  const started = await harness.startGateway()
  url = started.url
  gatewayAdmin = started.gateway
  const { key } = await started.gateway.admin.createKey({ kind: 'management', name: 'sdk management' })
  management = client(key)
})

afterAll(() => harness.close())

const collect = async <T>(pages: AsyncIterable<{ result: { data: T[] } }>): Promise<T[]> => {
  const items: T[] = []
  for await (const page of pages) items.push(...page.result.data)
  return items
}

describe('@openrouter/sdk guardrails', () => {
  it('creates a guardrail, assigns a key, and the openai SDK gets a typed 403 for a blocked prompt', async () => {
    const created = await management.guardrails.create({
      createGuardrailRequest: {
        name: 'No emails',
        description: 'Blocks email addresses',
        contentFilterBuiltins: [{ slug: 'email', action: 'block' }],
        contentFilters: [{ pattern: 'project-[a-z]+', action: 'redact', label: '[PROJECT]' }],
        limitUsd: 25,
        resetInterval: 'monthly',
      },
    })
    expect(created.data).toMatchObject({
      name: 'No emails',
      description: 'Blocks email addresses',
      contentFilterBuiltins: [{ slug: 'email', action: 'block' }],
      contentFilters: [{ pattern: 'project-[a-z]+', action: 'redact', label: '[PROJECT]' }],
      limitUsd: 25,
      resetInterval: 'monthly',
      includeByokInBudgets: false,
    })
    const guardrailId = created.data.id

    const { key: rawKey, data: keyData } = await management.apiKeys.create({ requestBody: { name: 'Governed' } })
    const assigned = await management.guardrails.bulkAssignKeys({ id: guardrailId, bulkAssignKeysRequest: { keyHashes: [keyData.hash] } })
    expect(assigned.assignedCount).toBe(1)

    const blocked = openai(rawKey).responses.create({ model: FAMILIES.openai.model, input: 'Write to jane.doe@example.com about the launch' })
    await expect(blocked).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError)
    const error = (await blocked.catch((caught: unknown) => caught)) as InstanceType<typeof OpenAI.PermissionDeniedError>
    expect(error.status).toBe(403)
    expect((error.error as { metadata: Record<string, unknown> }).metadata).toMatchObject({ patterns: ['email'], guardrail_id: guardrailId })
    expect(JSON.stringify(error.error)).not.toContain('jane.doe')
    expect(harness.upstreams.openai!.requests).toHaveLength(0)
    // The block is in the usage ledger: the error names its generation, which the SDK reads back typed.
    const generationId = (error.error as { metadata: { generation_id: string } }).metadata.generation_id
    const { data: refused } = await client(rawKey).generations.getGeneration({ id: generationId })
    expect(refused).toMatchObject({ id: generationId, model: FAMILIES.openai.model, totalCost: 0, tokensPrompt: 0, tokensCompletion: 0, providerName: null, providerResponses: [], finishReason: 'error' })

    // A clean prompt goes through, with the custom pattern redacted before it leaves the gateway.
    const answer = await openai(rawKey).responses.create({ model: FAMILIES.openai.model, input: 'What is the capital of France? (ask project-apollo)' })
    expect(answer.output_text).toContain('Paris')
    const sent = harness.upstreams.openai!.requests.at(-1)!.json
    expect(JSON.stringify(sent.input)).toContain('[PROJECT]')
    expect(JSON.stringify(sent.input)).not.toContain('project-apollo')
    await gatewayAdmin.flushSpend()

    // Key assignments, listed for the guardrail and for the account.
    const forGuardrail = await collect(await management.guardrails.listGuardrailKeyAssignments({ id: guardrailId }))
    expect(forGuardrail).toEqual([
      expect.objectContaining({ keyHash: keyData.hash, guardrailId, keyName: 'Governed', keyLabel: keyData.label }),
    ])
    const all = await collect(await management.guardrails.listKeyAssignments())
    expect(all.map((assignment) => assignment.keyHash)).toContain(keyData.hash)

    const unassigned = await management.guardrails.bulkUnassignKeys({ id: guardrailId, bulkUnassignKeysRequest: { keyHashes: [keyData.hash] } })
    expect(unassigned.unassignedCount).toBe(1)
    expect(await collect(await management.guardrails.listGuardrailKeyAssignments({ id: guardrailId }))).toEqual([])
    // Unassigned, the key sends the email address upstream.
    const free = await openai(rawKey).responses.create({ model: FAMILIES.openai.model, input: 'What is the capital of France? jane.doe@example.com' })
    expect(free.output_text).toContain('Paris')
  })

  it('lists, gets, updates and deletes guardrails, every answer typed', async () => {
    const created = await management.guardrails.create({
      createGuardrailRequest: { name: 'Routing', allowedProviders: ['openai'], enforceZdrAnthropic: true, ignoredModels: [FAMILIES.chat.model] },
    })
    const id = created.data.id
    expect(created.data).toMatchObject({ allowedProviders: ['openai'], enforceZdrAnthropic: true, enforceZdrOpenai: null, ignoredModels: [FAMILIES.chat.model] })

    const listed = await collect(await management.guardrails.list())
    expect(listed.map((guardrail) => guardrail.id)).toContain(id)

    const fetched = await management.guardrails.get({ id })
    expect(fetched.data.name).toBe('Routing')

    const updated = await management.guardrails.update({
      id,
      updateGuardrailRequest: { name: 'Routing v2', allowedProviders: null, enforceZdr: false, limitUsd: 3, resetInterval: 'daily', includeByokInBudgets: true },
    })
    expect(updated.data).toMatchObject({
      name: 'Routing v2',
      allowedProviders: null,
      // The deprecated switch fills the families the request does not name; anthropic was not named, so it follows too.
      enforceZdr: false,
      enforceZdrAnthropic: false,
      limitUsd: 3,
      resetInterval: 'daily',
      includeByokInBudgets: true,
    })
    expect(updated.data.updatedAt).toEqual(expect.any(String))

    const { data: keyData } = await management.apiKeys.create({ requestBody: { name: 'Assigned then orphaned' } })
    await management.guardrails.bulkAssignKeys({ id, bulkAssignKeysRequest: { keyHashes: [keyData.hash] } })
    const deleted = await management.guardrails.delete({ id })
    expect(deleted.deleted).toBe(true)
    await expect(management.guardrails.get({ id })).rejects.toMatchObject({ statusCode: 404 })
    const remaining = await collect(await management.guardrails.listKeyAssignments())
    expect(remaining.map((assignment) => assignment.keyHash)).not.toContain(keyData.hash)
  })

  it('assigns members (the users keys act for) and lists and unassigns them, every answer typed', async () => {
    const { data: guardrail } = await management.guardrails.create({ createGuardrailRequest: { name: 'Members', contentFilterBuiltins: [{ slug: 'ssn', action: 'block' }] } })
    const { key: rawKey } = await management.apiKeys.create({ requestBody: { name: 'Carol', creatorUserId: 'user_carol' } })
    const assigned = await management.guardrails.bulkAssignMembers({ id: guardrail.id, bulkAssignMembersRequest: { memberUserIds: ['user_carol'] } })
    expect(assigned.assignedCount).toBe(1)
    const forGuardrail = await collect(await management.guardrails.listGuardrailMemberAssignments({ id: guardrail.id }))
    expect(forGuardrail).toEqual([expect.objectContaining({ userId: 'user_carol', guardrailId: guardrail.id })])
    expect((await collect(await management.guardrails.listMemberAssignments())).map((assignment) => assignment.userId)).toContain('user_carol')

    await expect(openai(rawKey).chat.completions.create({ model: FAMILIES.openai.model, messages: [{ role: 'user', content: 'My SSN is 123-45-6789' }] })).rejects.toBeInstanceOf(
      OpenAI.PermissionDeniedError,
    )

    // The same block reaches Anthropic's SDK as its own typed error.
    const anthropic = new Anthropic({ baseURL: url.replace(/\/v1$/, ''), apiKey: rawKey, maxRetries: 0, timeout: 30_000 })
    await expect(
      anthropic.messages.create({ model: FAMILIES.anthropic.model, max_tokens: 50, messages: [{ role: 'user', content: 'SSN 123-45-6789' }] }),
    ).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError)

    const unassigned = await management.guardrails.bulkUnassignMembers({ id: guardrail.id, bulkUnassignMembersRequest: { memberUserIds: ['user_carol'] } })
    expect(unassigned.unassignedCount).toBe(1)
    expect(await collect(await management.guardrails.listGuardrailMemberAssignments({ id: guardrail.id }))).toEqual([])
  })
})
