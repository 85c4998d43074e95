/** The features' stages of every kind, composed once from the lists the composition root writes. */

import { composePlanStages, type PlanStage } from './plan-stage'
import type { EngineStages } from './service'
import { composeTurnStages, type TurnStage } from './turn-stage'

export const engineStages = (stages: { plan?: readonly PlanStage[]; turns?: readonly TurnStage[] }): EngineStages => ({
  plan: composePlanStages(stages.plan ?? []),
  turns: composeTurnStages(stages.turns ?? []),
})
