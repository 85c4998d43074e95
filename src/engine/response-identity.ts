/** A response's id and timestamps: dates on the gateway's clock (so an injected clock reaches them all). */

import { randomHex } from '../core/crypto'
import type { InferenceService } from './service'

export const newResponseId = () => `resp_${randomHex(24)}`

export const nowSeconds = (service: InferenceService) => Math.floor(service.now() / 1000)
