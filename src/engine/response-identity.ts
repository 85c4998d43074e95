/** A response's id and timestamps: dates on the gateway's clock (so an injected clock reaches them all). */

import { timeOrderedHex } from '../core/crypto'
import type { InferenceService } from './service'

/** 48 hex digits, time first: the usage ledger's record of the answer is stored under this id. */
export const newResponseId = () => `resp_${timeOrderedHex(24)}`

export const nowSeconds = (service: InferenceService) => Math.floor(service.now() / 1000)
