/**
 * Every route that changes something records it in the audit log (docs/decisions.md, Audit log): this table names the
 * action of each, and the route table must agree with it. A new mutating route fails here until it declares its
 * action (`audit` in its definition, recorded through `context.audit`) and is added below; test/unit/routes/audit-log.test.ts
 * checks the entries themselves.
 */
import { describe, expect, it } from 'vitest'
import { AUDIT_ACTIONS } from '../../../src/repositories/audit-log'
import { routes } from '../../../src/routes'

const AUDITED: Record<string, string> = {
  'POST /keys': 'key.create',
  'PATCH /keys/:hash': 'key.update',
  'DELETE /keys/:hash': 'key.delete',
  'POST /byok': 'byok.create',
  'PATCH /byok/:id': 'byok.update',
  'DELETE /byok/:id': 'byok.delete',
  'POST /workspaces': 'workspace.create',
  'PATCH /workspaces/:id': 'workspace.update',
  'DELETE /workspaces/:id': 'workspace.delete',
  'PUT /workspaces/:id/budgets/:interval': 'workspace_budget.set',
  'DELETE /workspaces/:id/budgets/:interval': 'workspace_budget.delete',
  'DELETE /workspaces/:id/response-cache': 'workspace.clear_response_cache',
  'POST /guardrails': 'guardrail.create',
  'PATCH /guardrails/:id': 'guardrail.update',
  'DELETE /guardrails/:id': 'guardrail.delete',
  'POST /guardrails/:id/assignments/keys': 'guardrail.assign_keys',
  'POST /guardrails/:id/assignments/keys/remove': 'guardrail.unassign_keys',
  'POST /guardrails/:id/assignments/members': 'guardrail.assign_members',
  'POST /guardrails/:id/assignments/members/remove': 'guardrail.unassign_members',
  'POST /presets/:slug/responses': 'preset.save',
  'POST /presets/:slug/chat/completions': 'preset.save',
  'POST /presets/:slug/messages': 'preset.save',
  'POST /interns': 'intern.create',
  'PATCH /interns/:internId': 'intern.update',
  'DELETE /interns/:internId': 'intern.delete',
  'POST /interns/:internId/provision': 'intern.provision',
  'POST /interns/:internId/suspend': 'intern.suspend',
}

/** Methods that read: everything else changes something. */
const READS = new Set(['GET', 'HEAD'])

describe('the audit log covers every change', () => {
  it('every route that changes something, but those that run models, declares the action the table names', () => {
    const mutating = routes.filter((route) => !READS.has(route.method) && route.auth !== 'inference')
    const declared = Object.fromEntries(mutating.map((route) => [`${route.method} ${route.path}`, route.audit]))
    expect(declared).toStrictEqual(AUDITED)
  })

  it('routes that run models or only read declare none', () => {
    const others = routes.filter((route) => READS.has(route.method) || route.auth === 'inference')
    expect(others.filter((route) => route.audit !== undefined).map((route) => `${route.method} ${route.path}`)).toEqual([])
  })

  it('each action is one the audit log knows', () => {
    for (const action of Object.values(AUDITED)) expect(AUDIT_ACTIONS).toContain(action)
  })
})
