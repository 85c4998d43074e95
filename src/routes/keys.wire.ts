/**
 * The public form of an API key, as `@openrouter/sdk` reads it from `/keys` and `/key`: never the raw key
 * (returned only by create), with its limit and what it spent per UTC period.
 */

import { fromNano } from '../core/money'
import type { ApiKeyRecord } from '../repositories/api-keys'
import { cacheSettingToWire } from './response-cache.schemas'
import type { KeySpend, SpendWindow } from '../repositories/spend-counters'

/** Spend and limit fields, shared by the key object and `GET /key`. */
export const toKeySpendWire = (key: ApiKeyRecord, spend: KeySpend) => {
  // BYOK spend at the list price is what `all` holds beyond `usage`; an in-flight reservation may briefly tip it below.
  const byok = (window: SpendWindow) => fromNano(Math.max(0, spend.all[window] - spend.usage[window]))
  const window: SpendWindow = key.limitReset ?? 'total'
  const counted = (key.includeByokInLimit ? spend.all : spend.usage)[window]
  return {
    limit: key.limitNano === null ? null : fromNano(key.limitNano),
    limit_remaining: key.limitNano === null ? null : fromNano(Math.max(0, key.limitNano - counted)),
    limit_reset: key.limitReset,
    include_byok_in_limit: key.includeByokInLimit,
    usage: fromNano(spend.usage.total),
    usage_daily: fromNano(spend.usage.daily),
    usage_weekly: fromNano(spend.usage.weekly),
    usage_monthly: fromNano(spend.usage.monthly),
    byok_usage: byok('total'),
    byok_usage_daily: byok('daily'),
    byok_usage_weekly: byok('weekly'),
    byok_usage_monthly: byok('monthly'),
  }
}

/** The key object of `/keys` answers. */
export const toApiKeyWire = (key: ApiKeyRecord, spend: KeySpend) => ({
  hash: key.hash,
  name: key.name,
  label: key.label,
  kind: key.kind,
  disabled: key.disabled,
  workspace_id: key.workspaceId,
  creator_user_id: key.creatorUserId,
  // OpenRouter's partner identity (`external` on create) is refused, so no key has one.
  external_user: null,
  ...toKeySpendWire(key, spend),
  expires_at: key.expiresAt,
  cache: cacheSettingToWire(key.cache),
  created_at: key.createdAt,
  updated_at: key.updatedAt,
})
