/**
 * Whether a prepared request's answer may be served again (docs/decisions.md, Response cache). The one place the
 * rules live: each reads one of the request's feature slots, so a change to those slots changes this function only.
 */

import type { InferenceRequest } from '../../engine/request'
import { pluginsOf } from '../plugins/request-plugins'
import { SERVER_TOOLS, SUB_RUNS } from '../server-tools/request-server-tools'

/** Plugins whose answers depend on the live web at the time of asking. */
const LIVE_PLUGINS: ReadonlySet<string> = new Set(['web', 'web-fetch'])

/** Tool kinds that are the model's own to call back: the caller runs them, so the answer is only a request to. */
const CALLER_RUN_TOOLS: ReadonlySet<string> = new Set(['function', 'custom'])

/** Why the request cannot be served from the cache, or `null` when it can. */
export const uncacheableReason = (request: InferenceRequest): string | null => {
  const { body } = request
  if (body.background) return 'background'
  if (body.debug?.echo_upstream_body) return 'debug'
  // Server tools act (search, fetch, run code, consult other models) each time they are called.
  if (SERVER_TOOLS.get(request) || SUB_RUNS.get(request)) return 'server tools'
  // Tools an upstream runs itself (its web search, its code interpreter) act as the gateway's own do.
  if (body.tools?.some((tool) => !CALLER_RUN_TOOLS.has(tool.type))) return 'provider-run tools'
  if (pluginsOf(request).some((plugin) => LIVE_PLUGINS.has(plugin.id))) return 'web plugin'
  return null
}
