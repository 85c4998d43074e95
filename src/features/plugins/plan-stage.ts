/**
 * The plugins' plan stage (src/engine/plan-stage.ts): the listed plugins are checked and built before anything is
 * read for the request (a plugin this gateway does not run is a 400 before the store is asked), and the implicit ones
 * join once the attempts are planned, since whether they are needed depends on the endpoints (registry.ts).
 */

import type { PlanStage } from '../../engine/plan-stage'
import { requestSlot } from '../../engine/request-slot'
import type { RequestPlugin } from './contract'
import { planPlugins, withImplicitPlugins } from './registry'
import { setPlugins } from './request-plugins'

/** The listed plugins, from the check of the body to the request's finish. */
const LISTED = requestSlot<RequestPlugin[]>('listed plugins')

export const pluginsPlanStage: PlanStage = {
  name: 'plugins',
  checkBody(arrival) {
    LISTED.set(arrival, planPlugins(arrival.service, arrival.received))
  },
  finish(preparation, request) {
    setPlugins(request, withImplicitPlugins(preparation.service, preparation.body, LISTED.get(preparation)!, request.attempts))
  },
}
