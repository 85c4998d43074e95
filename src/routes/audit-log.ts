/**
 * `GET /audit-log`: the account's administrative changes, newest first, for management keys (docs/decisions.md,
 * Audit log). Pages with an opaque cursor (cursor.ts); filters combine.
 */

import { InvalidRequestError } from '../core/errors'
import { defineRoute, json } from '../pipeline/route'
import { toAuditWire } from '../services/audit-log'
import { ListAuditLogQuerySchema } from './audit-log.schemas'
import { decodeCursor, encodeCursor } from './cursor'

export const listAuditLog = defineRoute({
  method: 'GET',
  path: '/audit-log',
  auth: 'management',
  query: ListAuditLogQuerySchema,
  async handle({ query, caller, repositories }) {
    const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor)
    if (query.cursor !== undefined && !before) throw new InvalidRequestError('query.cursor: must be a cursor from next_cursor')
    const { entries, hasMore } = await repositories.auditLog.page(
      { accountId: caller.account.id, action: query.action, targetType: query.target_type, targetId: query.target_id, actor: query.actor },
      { from: query.from, to: query.to, before, limit: query.limit },
    )
    const last = entries.at(-1)
    // As `GET /interns`: the last page has no `next_cursor` at all.
    return json({ data: entries.map(toAuditWire), has_more: hasMore, ...(hasMore && last ? { next_cursor: encodeCursor(last) } : {}) })
  },
})
