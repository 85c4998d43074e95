/**
 * The plan stage of the plugins that choose the models (src/engine/plan-stage.ts; docs/decisions.md, "Plugins:
 * routers and fusion"): router models (`service/auto`, …) become the concrete models they chose; fusion adds a panel
 * of analysis models, each planned as the caller's request is, before the request's own model judges. The runs of
 * other models that `service:fusion` consults from inside the server-tool loop are planned here too.
 */

import { InvalidRequestError, isGatewayError } from '../../core/errors'
import type { PlanStage } from '../../engine/plan-stage'
import type { InferenceRequest } from '../../engine/request'
import { requestSlot } from '../../engine/request-slot'
import { openTurns } from '../../engine/run'
import { SUB_RUNS, SERVER_TOOLS } from '../server-tools/request-server-tools'
import { analystBody, takesStructuredOutput } from './fusion/analysis'
import { FUSION_ITEM_TYPE } from './fusion/item'
import { FUSION_SLUG, planFusion, type FusionPlan } from './fusion/plan'
import { FUSION } from './fusion/request-fusion'
import { routableModels } from './routers/candidates'
import { routeWithPlugins, type RouterDecision } from './routers/route'

const FUSION_PLAN = requestSlot<FusionPlan>('fusion plan')
const ROUTED = requestSlot<RouterDecision>('router decision')

/** A panel member's plan; its tools are the plugin's, so a bad one is named where the caller wrote it. */
const planPanelMember = (plan: () => InferenceRequest, pluginIndex: number | null): InferenceRequest => {
  try {
    return plan()
  } catch (error) {
    if (pluginIndex === null || !isGatewayError(error) || error.status !== 400 || !error.message.startsWith('body.tools.')) throw error
    throw new InvalidRequestError(error.message.replace('body.tools.', `body.plugins.${pluginIndex}.tools.`))
  }
}

export const modelChoicePlanStage: PlanStage = {
  name: 'model-choice',
  chooseModels(preparation) {
    const { service, body, scope } = preparation
    const fusion = planFusion(service, body, scope.credentials)
    const routed = routeWithPlugins(service, body, { workspaceId: preparation.caller.key.workspaceId, sessionId: preparation.sessionId, credentials: scope.credentials })
    if (fusion) FUSION_PLAN.set(preparation, fusion)
    if (routed) {
      ROUTED.set(preparation, routed)
      preparation.pipeline.push(routed.stage)
    }
    return fusion?.judge ? [...new Set([fusion.judge, ...(body.models ?? []).filter((slug) => slug !== FUSION_SLUG)])] : routed?.models
  },
  finish(preparation, request) {
    const { service, body } = preparation
    if (SERVER_TOOLS.get(request)?.byItemType.has(FUSION_ITEM_TYPE)) {
      // `service:fusion` consults other models from inside the loop: their runs are planned as this request's are, and
      // opened without a reservation of their own, since the tool reports their cost with the response's.
      const reachable = new Set(routableModels(service, preparation.scope.credentials).map((candidate) => candidate.slug))
      SUB_RUNS.set(request, {
        body,
        model: request.attempts[0]!.model.slug,
        takesStructuredOutput: (model) => takesStructuredOutput(preparation.plan(analystBody(body, model, false), [model]).attempts),
        isReachable: (model) => reachable.has(model),
        open: async (subBody, model) => openTurns(service, { ...preparation.plan(subBody, [model]), isMetadataRequested: false }),
      })
    }
    const routed = ROUTED.get(preparation)
    if (routed) request.requestedModel = routed.requested
    const fusion = FUSION_PLAN.get(preparation)
    if (!fusion) {
      if (routed) request.routing = { strategy: routed.strategy }
      return
    }
    if (fusion.judge) request.requestedModel = FUSION_SLUG
    const panel = fusion.analysisModels.map((model) => ({ ...planPanelMember(() => preparation.plan(fusion.panelBody(model), [model]), fusion.pluginIndex), isMetadataRequested: false }))
    // The analyst is the plugin's model, or the judge with its fallbacks; asked for structured output where every endpoint takes it.
    const analystModels = fusion.analyst ? [fusion.analyst] : preparation.models
    const analyst = preparation.plan(analystBody(body, analystModels[0]!, false), analystModels)
    if (takesStructuredOutput(analyst.attempts)) analyst.body = analystBody(body, analystModels[0]!, true)
    request.routing = { strategy: 'fusion' }
    FUSION.set(request, { panel, analyst: { ...analyst, isMetadataRequested: false } })
  },
}
