/** Request ids: a caller's `x-request-id` is kept when it is safe to echo, otherwise one is generated. */

import { randomId } from './crypto'

export const REQUEST_ID_HEADER = 'x-request-id'

// Only echo ids that cannot smuggle header or log injection.
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/

export const resolveRequestId = (request: Request): string => {
  const incoming = request.headers.get(REQUEST_ID_HEADER)
  return incoming && SAFE_REQUEST_ID.test(incoming) ? incoming : randomId()
}
