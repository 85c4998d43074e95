/** The engine's results as Responses objects (spec: Response result), through the one envelope. */

import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { ResponseResult } from '../../engine/session-events'
import { toResponseObject } from './envelope'
import { responsesErrorCode } from './error-code'

/** The response as `response.created` and `response.in_progress` show it. */
export const inProgressObject = (request: ResponsesRequestBody, started: { id: string; createdAt: number; model: string }) =>
  toResponseObject(
    { id: started.id, createdAt: started.createdAt, model: started.model, request },
    { status: 'in_progress', output: [], usage: null, error: null, errorType: null, incompleteDetails: null, completedAt: null },
  )

/** The final response: the whole answer's body, or the stream's last event's. */
export const resultObject = (request: ResponsesRequestBody, result: ResponseResult) =>
  toResponseObject(
    { id: result.id, createdAt: result.createdAt, model: result.model, request },
    {
      status: result.status,
      output: result.output,
      usage: result.usage,
      error: result.error ? { code: responsesErrorCode(result.error.errorType), message: result.error.message } : null,
      errorType: result.error ? result.error.errorType : null,
      incompleteDetails: result.incompleteDetails,
      completedAt: result.completedAt,
      ...(result.serviceMetadata ? { serviceMetadata: result.serviceMetadata } : {}),
      ...(result.serviceTier === undefined ? {} : { serviceTier: result.serviceTier }),
    },
  )
