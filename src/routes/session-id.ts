/**
 * The request's session id (spec `session_id`): the body's, else the `x-session-id` header's. The header is held to
 * the body field's bound: a longer one is a 400 naming it, never cut or taken as it is.
 */

import { InvalidRequestError } from '../core/errors'
import { SESSION_ID_MAX } from '../engine/request.schemas'

export const sessionIdOf = (bodySessionId: string | undefined, headers: Headers): string | undefined => {
  if (bodySessionId !== undefined) return bodySessionId
  const header = headers.get('x-session-id') ?? undefined
  if (header !== undefined && header.length > SESSION_ID_MAX) throw new InvalidRequestError(`headers.x-session-id: must be at most ${SESSION_ID_MAX} characters`)
  return header
}
