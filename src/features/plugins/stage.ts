/**
 * The plugins' stage around a request's run (run-stage.ts): what the request's plugins may spend (the web plugin's
 * searches) is held before they run, so a limit they would pass is a 402 before anything is spent; their work before
 * the attempts runs next; the hold is given back once the request's own settlement carries what they spent, or
 * charged when the request fails before that.
 */

import { GatewayError, isGatewayError } from '../../core/errors'
import { paidUsageOf } from '../guardrails/enforce'
import { observeSession, type SessionEnd } from '../../engine/observe'
import type { InferenceRequest } from '../../engine/request'
import type { RunOutcome, RunStage } from '../../engine/run-stage'
import type { InferenceService } from '../../engine/service'
import { serviceMetadata } from '../../engine/service-metadata'
import { reservePluginSpend } from '../../engine/spend'
import { runBeforeAttempts } from './apply'
import { pluginsOf } from './request-plugins'

/**
 * The plugins' work before the attempts. A plugin's refusal (moderation's 403) carries the metadata pipeline when
 * the caller asked for it, so the stage that refused is visible.
 */
const runPluginsBeforeAttempts = async (service: InferenceService, request: InferenceRequest): Promise<void> => {
  const startedAt = performance.now()
  try {
    await runBeforeAttempts(request)
  } catch (error) {
    if (!isGatewayError(error) || !request.isMetadataRequested || error.extraBody) throw error
    throw new GatewayError(error.status, error.message, {
      ...(error.metadata ? { metadata: error.metadata } : {}),
      ...(error.headers ? { headers: error.headers } : {}),
      extraBody: { service_metadata: serviceMetadata(service, request, null, 0, startedAt) },
      cause: error,
    })
  }
}

/** USD the request's plugins spent before its attempts. */
const pluginsSpent = (request: InferenceRequest) => pluginsOf(request).reduce((sum, plugin) => sum + (plugin.spent?.() ?? 0), 0)

export const pluginsStage = (service: InferenceService): RunStage => ({
  name: 'plugins',
  async run(request, next) {
    const priceNano = pluginsOf(request).reduce((sum, plugin) => sum + Math.ceil((plugin.price ?? 0) * 1e9), 0)
    const held = await reservePluginSpend(service, request, priceNano)
    let outcome: RunOutcome
    try {
      await runPluginsBeforeAttempts(service, request)
      outcome = await next(request)
    } catch (error) {
      // An answer paid for and then refused (a guardrail) settled with the plugins' spend in its usage.
      held?.charge(paidUsageOf(error) ? 0 : pluginsSpent(request))
      throw error
    }
    if (!held) return outcome
    if (!outcome.isStream) {
      held.charge(0)
      return outcome
    }
    // A stream that ended without usage (every attempt failed after the commit, a bug) did not carry the plugins' spend.
    const isCarried = (end: SessionEnd) => (end.how === 'finished' ? end.result.usage !== null : end.how === 'stopped' && end.used !== undefined)
    return { isStream: true, session: observeSession(outcome.session, { onEnd: (end) => held.charge(isCarried(end) ? 0 : pluginsSpent(request)) }) }
  },
})
