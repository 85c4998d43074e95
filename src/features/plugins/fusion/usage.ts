/** A fusion response's usage: every panel member's and the judge's, added up (each priced by its own endpoint). */

import type { BilledUsage } from '../../../engine/billing'
import { sumLoopUsage, type ServerToolUseDetails } from '../../server-tools/usage'

type WithDetails = BilledUsage & { server_tool_use_details?: ServerToolUseDetails }

export const sumFusionUsage = (usages: ReadonlyArray<BilledUsage | null>): BilledUsage => {
  const known = usages.filter((usage): usage is WithDetails => usage !== null)
  const details = known.map((usage) => usage.server_tool_use_details).filter((detail): detail is ServerToolUseDetails => detail !== undefined)
  const total = sumLoopUsage(known, 0, {
    tool_calls_requested: details.reduce((sum, detail) => sum + detail.tool_calls_requested, 0),
    tool_calls_executed: details.reduce((sum, detail) => sum + detail.tool_calls_executed, 0),
    web_search_requests: details.reduce((sum, detail) => sum + detail.web_search_requests, 0),
  })
  if (details.length > 0) return total
  const { server_tool_use_details: _details, ...usage } = total
  return usage
}
