/** The HTTP answer of a Messages request: a whole answer as a `message`, a session as Anthropic's events. */

import { errorReply, GatewayError } from '../../core/errors'
import { json } from '../../core/reply'
import { toMessage } from './json'
import { toMessagesSse } from './sse'
import { OVERHEAD_HEADER, sseReply, type WireFormat } from '../shared/reply'

export const MESSAGES_FORMAT: WireFormat = {
  whole: (answer) => {
    const headers = { [OVERHEAD_HEADER]: answer.overheadMs.toFixed(3) }
    const { error } = answer.result
    // A message has no room for a failure: it is answered as Anthropic answers one, with its status.
    if (answer.result.status === 'failed' && error) return errorReply(new GatewayError(error.status, error.message), 'anthropic', headers)
    return json(toMessage(answer.result, answer.request.service_tier), 200, headers)
  },
  stream: (session) => sseReply(toMessagesSse(session), session.overheadMs),
}
