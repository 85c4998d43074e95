/**
 * The server tools' own state on a request (src/engine/request-slot.ts): the plan of the tools the gateway runs for
 * it, and the runs of other models that tools consulting them (`service:fusion`) open.
 */

import { requestSlot } from '../../engine/request-slot'
import type { SubRuns } from './contract'
import type { ServerToolPlan } from './plan'

/** The server tools the gateway runs for the request; absent when it has none (one turn, as always). */
export const SERVER_TOOLS = requestSlot<ServerToolPlan>('server tools')

/** Other models' runs for server tools that consult them (`service:fusion`); absent when no tool does. */
export const SUB_RUNS = requestSlot<SubRuns>('sub-runs')
