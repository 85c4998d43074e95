/**
 * Fusion's stage around a request's run (run-stage.ts): a fusion request is answered by its panel's runs and its
 * judge's, each reserving (all before any is sent) and settling its own spend, instead of the engine's single run.
 */

import { reserveRun } from '../../../engine/run'
import type { InferenceRequest } from '../../../engine/request'
import type { RunStage } from '../../../engine/run-stage'
import type { InferenceService } from '../../../engine/service'
import { FUSION } from './request-fusion'
import { answerFusion, openFusionSession } from './run'

export const fusionStage = (service: InferenceService): RunStage => ({
  name: 'fusion',
  async run(request, next) {
    const fusion = FUSION.get(request)
    if (!fusion) return next(request)
    const reserve = (run: InferenceRequest) => reserveRun(service, run)
    return request.body.stream
      ? { isStream: true, session: await openFusionSession(service, request, fusion, reserve) }
      : { isStream: false, answer: await answerFusion(service, request, fusion, reserve) }
  },
})
