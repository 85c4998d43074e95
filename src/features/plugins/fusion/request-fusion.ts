/** A fusion request's own state (src/engine/request-slot.ts): its panel, one prepared request per analysis model, and its analyst's. */

import type { InferenceRequest } from '../../../engine/request'
import { requestSlot } from '../../../engine/request-slot'

export interface PreparedFusion {
  panel: InferenceRequest[]
  analyst: InferenceRequest
}

export const FUSION = requestSlot<PreparedFusion>('fusion')
