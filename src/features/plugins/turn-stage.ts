/**
 * The plugins' turn stage (src/engine/turn-stage.ts): a whole answer passes their `afterWhole`, a streamed one their
 * `onStreamEvent` and `onStopped` (apply.ts), and each attempt's call their `forAttempt`, per endpoint, so a
 * fallback with a larger context gets the whole prompt.
 */

import type { TurnStage } from '../../engine/turn-stage'
import { afterWhole, observedByPlugins } from './apply'
import { pluginsOf } from './request-plugins'

export const pluginsTurnStage: TurnStage = {
  name: 'plugins',
  answer(_service, request, next) {
    // A request without plugins gets its answer as the turns gave it, without a step of its own.
    if (pluginsOf(request).length === 0) return next(request)
    return next(request).then((answer) => ({ ...answer, result: afterWhole(answer.result, request) }))
  },
  open(_service, request, next) {
    if (pluginsOf(request).length === 0) return next(request)
    return next(request).then((session) => observedByPlugins(session, request))
  },
  shapeCall(call, attempt, request) {
    let shaped = call
    for (const plugin of pluginsOf(request)) if (plugin.forAttempt) shaped = plugin.forAttempt(shaped, attempt, request)
    return shaped
  },
}
