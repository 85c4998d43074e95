/** `/workspaces/{id}/budgets[/{interval}]`: OpenRouter's workspace budget routes over the budget service. */

import { afterEach, describe, expect, it } from 'vitest'
import { createTestGateway, scriptedProvider, type TestGateway } from '../../../src/testing'
import { readJson } from '../../helpers/gateway'

const REPLY = [{ type: 'text' as const, text: ['Hello'] }, { type: 'usage' as const, inputTokens: 10, outputTokens: 5 }]
const SMALL = { model: 'test/model', input: 'Hi', max_output_tokens: 8 }
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

let t: TestGateway | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

const start = async () => {
  t = await createTestGateway({ providers: { alpha: scriptedProvider({ reply: REPLY }) } })
  return t
}

describe('workspace budget routes', () => {
  it('sets, reads, lists and deletes budgets in OpenRouter\'s shape, and the spend checks enforce them', async () => {
    const t = await start()
    const workspaceId = (await readJson(await t.call('GET', '/workspaces/default'))).data.id
    expect(await readJson(await t.call('GET', '/workspaces/default/budgets'))).toEqual({ data: [], include_byok_in_budgets: false })

    const set = await t.call('PUT', '/workspaces/default/budgets/monthly', { json: { limit_usd: 0.00002 } })
    expect(set.status).toBe(200)
    const monthly = await readJson(set)
    expect(monthly).toEqual({
      data: { id: expect.any(String), workspace_id: workspaceId, limit_usd: 0.00002, reset_interval: 'monthly', created_at: expect.stringMatching(ISO), updated_at: expect.stringMatching(ISO) },
      include_byok_in_budgets: false,
    })
    // Setting it again changes the limit of the same budget; include_byok_in_budgets applies to the workspace.
    const raised = await readJson(await t.call('PUT', `/workspaces/${workspaceId}/budgets/monthly`, { json: { limit_usd: 0.00004, include_byok_in_budgets: true } }))
    expect(raised).toMatchObject({ data: { id: monthly.data.id, limit_usd: 0.00004 }, include_byok_in_budgets: true })
    const lifetime = await readJson(await t.call('PUT', '/workspaces/default/budgets/lifetime', { json: { limit_usd: 25 } }))
    expect(lifetime.data.reset_interval).toBeNull()
    expect(await readJson(await t.call('GET', '/workspaces/default/budgets/monthly'))).toEqual(raised)
    const list = await readJson(await t.call('GET', '/workspaces/default/budgets'))
    expect(list.data.map((budget: any) => [budget.reset_interval, budget.limit_usd])).toEqual([['monthly', 0.00004], [null, 25]])
    expect(list.include_byok_in_budgets).toBe(true)

    // The budget the route set is the one requests are held to.
    expect((await t.responses(SMALL)).status).toBe(200)
    await t.gateway.flushSpend()
    const refused = await t.responses(SMALL)
    expect(refused.status).toBe(402)
    expect((await readJson(refused)).error.metadata).toEqual({ error_type: 'payment_required', limit: 'workspace_budget' })

    expect(await readJson(await t.call('DELETE', '/workspaces/default/budgets/monthly'))).toEqual({ deleted: true })
    expect((await t.responses(SMALL)).status).toBe(200)
    const gone = await t.call('DELETE', '/workspaces/default/budgets/monthly')
    expect(gone.status).toBe(404)
    expect(await readJson(gone)).toEqual({ error: { code: 404, message: 'The workspace has no monthly budget' } })
    expect(await readJson(await t.call('GET', '/workspaces/default/budgets/daily'))).toEqual({ error: { code: 404, message: 'The workspace has no daily budget' } })
  })

  it('refuses bad input, other keys and other accounts\' workspaces', async () => {
    const t = await start()
    const cases: [string, string, unknown, number, string][] = [
      ['PUT', '/workspaces/default/budgets/yearly', { limit_usd: 1 }, 400, 'params.interval: must be "daily", "weekly", "monthly" or "lifetime"'],
      ['PUT', '/workspaces/default/budgets/daily', { limit_usd: 0 }, 400, 'body.limit_usd: must be greater than 0'],
      ['PUT', '/workspaces/default/budgets/daily', { limit_usd: 2_000_000 }, 400, 'body.limit_usd: must be at most 1000000'],
      ['PUT', '/workspaces/default/budgets/daily', { limit_usd: 1, reset: 'x' }, 400, 'body.reset: unknown field'],
      ['PUT', '/workspaces/default/budgets/daily', {}, 400, 'body.limit_usd: is required'],
      ['GET', '/workspaces/nowhere/budgets', undefined, 404, 'Workspace not found'],
    ]
    for (const [method, path, json, status, message] of cases) {
      const response = await t.call(method, path, json === undefined ? {} : { json })
      expect(await readJson(response), message).toEqual({ error: { code: status, message } })
    }
    const regular = await t.call('GET', '/workspaces/default/budgets', { key: t.regularKey })
    expect(regular.status).toBe(403)
  })
})
