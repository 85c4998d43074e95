/** What `POST /responses` reads from its body beyond the engine's request, shared by the route and its background runs. */

import type { RouteExtensions } from '../engine/request'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import { pluginsWithTransforms } from '../formats/shared/transforms'

/**
 * spec `top_logprobs`: how many likely alternatives each output token carries. The spec's `include` has no
 * log-probabilities entry, so a positive `top_logprobs` is what asks for them: it becomes the `logprobs` setting
 * routing sends only where it is honoured, and the answer's `output_text` parts carry them. `0` and `null` ask for nothing.
 */
export const logprobsExtension = (body: ResponsesRequestBody): RouteExtensions | undefined =>
  body.top_logprobs ? { values: { logprobs: { topLogprobs: body.top_logprobs } }, fieldNames: { logprobs: 'body.top_logprobs' } } : undefined

/** `transforms: ["middle-out"]` is the context-compression plugin, `[]` turns it off (src/formats/shared/transforms.ts). */
export const withTransforms = (body: ResponsesRequestBody): ResponsesRequestBody => {
  if (body.transforms == null) return body
  const { transforms, ...rest } = body
  const plugins = pluginsWithTransforms(body.plugins, transforms)
  return plugins ? { ...rest, plugins } : rest
}
