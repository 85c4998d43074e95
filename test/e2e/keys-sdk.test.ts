/**
 * The API keys and credits areas read by OpenRouter's own SDK (`@openrouter/sdk`), whose zod schemas reject
 * an answer of the wrong shape: `apiKeys.create | list | get | update | delete`, `apiKeys.getCurrentKeyMetadata`
 * and `credits.getCredits`, over a real node:http server, with a key's limit and usage after a real request.
 */

import { OpenRouter } from '@openrouter/sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSdkHarness, FAMILIES } from '../helpers/sdk-gateway'

const harness = createSdkHarness()
let url: string
let gatewayAdmin: Awaited<ReturnType<typeof harness.startGateway>>['gateway']
let management: OpenRouter

const client = (apiKey: string) => new OpenRouter({ serverURL: url, apiKey, retryConfig: { strategy: 'none' }, timeoutMs: 30_000 })

beforeAll(async () => {
  await harness.start()
  const started = await harness.startGateway()
  url = started.url
  gatewayAdmin = started.gateway
  const { key } = await started.gateway.admin.createKey({ kind: 'management', name: 'sdk management' })
  management = client(key)
})

afterAll(() => harness.close())

// The openai fixture's answer: 19 input tokens at $0.40/M and 18 output tokens at $1.60/M.
const ANSWER_COST = 0.0000364

describe('@openrouter/sdk apiKeys and credits', () => {
  it('creates a key with a limit, reads it back, spends with it, updates and deletes it, every answer typed', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000)
    expiresAt.setUTCMilliseconds(0)
    const created = await management.apiKeys.create({
      requestBody: { name: 'Budgeted', limit: 5, limitReset: 'monthly', includeByokInLimit: true, expiresAt },
    })
    expect(created.key).toMatch(/^mg-v1-[0-9a-f]{64}$/)
    expect(created.data).toMatchObject({
      name: 'Budgeted',
      limit: 5,
      limitRemaining: 5,
      limitReset: 'monthly',
      includeByokInLimit: true,
      usage: 0,
      usageMonthly: 0,
      byokUsage: 0,
      disabled: false,
      externalUser: null,
    })
    expect(created.data.expiresAt).toEqual(expiresAt)
    const { hash } = created.data

    const listed = await management.apiKeys.list()
    expect(listed.data.map((key) => key.hash)).toContain(hash)

    // One request with the new key, then its usage everywhere.
    const response = await client(created.key).responses.send({ responsesRequest: { model: FAMILIES.openai.model, input: 'What is the capital of France?', stream: false } })
    expect('output' in response).toBe(true)
    await gatewayAdmin.flushSpend()

    const fetched = await management.apiKeys.get({ hash })
    expect(fetched.data.usage).toBeCloseTo(ANSWER_COST, 12)
    expect(fetched.data.usageDaily).toBeCloseTo(ANSWER_COST, 12)
    expect(fetched.data.limitRemaining).toBeCloseTo(5 - ANSWER_COST, 12)

    const current = await client(created.key).apiKeys.getCurrentKeyMetadata()
    expect(current.data).toMatchObject({
      label: created.data.label,
      limit: 5,
      limitReset: 'monthly',
      includeByokInLimit: true,
      isFreeTier: false,
      isManagementKey: false,
      isProvisioningKey: false,
      byokUsage: 0,
      workspaceId: created.data.workspaceId,
      organizationId: null,
      allowedDataRegions: ['global'],
      rateLimit: { requests: -1, interval: 'none' },
    })
    expect(current.data.usage).toBeCloseTo(ANSWER_COST, 12)
    expect(current.data.expiresAt).toEqual(expiresAt)

    const updated = await management.apiKeys.update({ hash, requestBody: { name: 'Rebudgeted', limit: null, limitReset: null, includeByokInLimit: false } })
    expect(updated.data).toMatchObject({ name: 'Rebudgeted', limit: null, limitRemaining: null, limitReset: null, includeByokInLimit: false })

    const credits = await management.credits.getCredits()
    expect(credits.data.totalCredits).toBe(0)
    expect(credits.data.totalUsage).toBeCloseTo(ANSWER_COST, 12)

    expect(await management.apiKeys.delete({ hash })).toEqual({ deleted: true })
    await expect(management.apiKeys.get({ hash })).rejects.toMatchObject({ statusCode: 404 })
  })
})
