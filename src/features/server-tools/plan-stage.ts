/**
 * The server tools' plan stage (src/engine/plan-stage.ts): every request planned for the caller (its own, a fusion
 * panel member's, a consulted model's) has its server tools planned before its attempts, so a tool the gateway
 * cannot run is a 400 naming it, and the provider tools the gateway runs itself need no endpoint that takes them.
 */

import type { PlanStage } from '../../engine/plan-stage'
import { providerToolsRunHere } from './executor'
import type { Nesting } from './nesting'
import { planServerTools } from './plan'
import { SERVER_TOOLS } from './request-server-tools'

export const serverToolsPlanStage: PlanStage = {
  name: 'server-tools',
  shapePlanned(preparation, draft) {
    const { service, scope } = preparation
    const { request, models } = draft
    const planBody = request.body
    const gatewayRunTools = providerToolsRunHere(service, planBody.tools, models)
    // Nested model calls (advisor, subagent) route as the caller's request does: their keys, their preferences.
    const nesting: Nesting = {
      depth: 0,
      defaultModel: models[0]!,
      defaultImageModel: scope.workspace.defaultImageModel,
      gatewayRunTools,
      disabled: scope.workspace.disabledServerTools,
      route: (model, nestedBody) => preparation.routeNested(planBody, model, nestedBody),
    }
    const serverTools = planServerTools(service, planBody, scope.workspace.disabledServerTools, nesting)
    if (gatewayRunTools.size > 0) draft.honoured = { ...draft.honoured, tools: draft.honoured.tools?.filter((tool) => !gatewayRunTools.has(tool.type)) }
    if (!serverTools) return
    SERVER_TOOLS.set(request, serverTools)
    if (serverTools.nativeWebSearch) draft.requirements.push(...serverTools.nativeWebSearch.requirements)
  },
}
