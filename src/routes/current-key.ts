/**
 * `GET /key`: the calling key, as OpenRouter's `GET /key` describes it (`@openrouter/sdk`
 * `apiKeys.getCurrentKeyMetadata`): its limit, what it spent per UTC period, and what kind of key it is.
 */

import { defineRoute, json } from '../pipeline/route'
import { toKeySpendWire } from './keys.wire'

// OpenRouter's legacy convention for a limit that does not apply: -1.
const NOT_APPLICABLE = -1

export const getCurrentKey = defineRoute({
  method: 'GET',
  path: '/key',
  auth: 'any',
  async handle({ caller, repositories, runtime, now }) {
    const { key } = caller
    const at = now()
    const [spend, workspace] = await Promise.all([repositories.spend.keySpend(key.hash, at), repositories.workspaces.get(key.workspaceId)])
    const { rateLimit } = runtime
    return json({
      data: {
        label: key.label,
        ...toKeySpendWire(key, spend),
        is_free_tier: false,
        is_management_key: key.kind === 'management',
        is_provisioning_key: key.kind === 'management',
        creator_user_id: key.creatorUserId,
        expires_at: key.expiresAt,
        // Accounts stand alone here: no organisation owns them.
        organization_id: null,
        workspace_id: workspace ? workspace.id : null,
        // docs/decisions.md, Credits and limits: no key is held to a data region.
        allowed_data_regions: ['global'],
        // No daily quota on free models: the figures say "not applicable" as OpenRouter's legacy fields do.
        free_model_daily_requests: { limit: NOT_APPLICABLE, remaining: NOT_APPLICABLE, used: 0 },
        rate_limit: rateLimit
          ? { requests: rateLimit.requests, interval: `${rateLimit.windowSeconds}s`, note: 'Requests per key per window, on every authenticated route' }
          : { requests: NOT_APPLICABLE, interval: 'none', note: 'No request rate limit is configured' },
      },
    })
  },
})
