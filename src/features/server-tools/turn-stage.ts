/**
 * The server tools' turn stage (src/engine/turn-stage.ts): a request with server tools is answered by the loop of
 * turns that runs them (whole-loop.ts, session-loop.ts) instead of the engine's single turn, and each attempt of a
 * request searching the web natively carries the search for the adapter to send.
 */

import type { TurnStage } from '../../engine/turn-stage'
import { SERVER_TOOLS } from './request-server-tools'
import { openServerToolSession } from './session-loop'
import { answerWithServerTools } from './whole-loop'

export const serverToolsTurnStage: TurnStage = {
  name: 'server-tools',
  answer(service, request, next) {
    const plan = SERVER_TOOLS.get(request)
    return plan ? answerWithServerTools(service, request, plan) : next(request)
  },
  open(service, request, next) {
    const plan = SERVER_TOOLS.get(request)
    return plan ? openServerToolSession(service, request, plan) : next(request)
  },
  shapeCall(call, _attempt, request) {
    const native = SERVER_TOOLS.get(request)?.nativeWebSearch
    return native ? { ...call, nativeWebSearch: native.search } : call
  },
}
