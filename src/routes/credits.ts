/**
 * `GET /credits` (management keys): what the operator granted the caller's account and what it spent,
 * as OpenRouter's `GET /credits` answers (`@openrouter/sdk` `credits.getCredits`).
 */

import { defineRoute, json } from '../pipeline/route'
import { accountCredits } from '../services/credits'

export const getCredits = defineRoute({
  method: 'GET',
  path: '/credits',
  auth: 'management',
  async handle({ caller, repositories, now }) {
    const { totalCredits, totalUsage } = await accountCredits(repositories, caller.account, now())
    return json({ data: { total_credits: totalCredits, total_usage: totalUsage } })
  },
})
