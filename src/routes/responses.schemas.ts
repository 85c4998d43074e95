/** Params and queries of the stored-response routes (`/responses/{id}`, `/responses/{id}/input_items`). */

import * as v from 'valibot'
import { integerQuery } from '../core/validation'

export const INPUT_ITEMS_PAGE_MAX = 100

export const ResponseParamsSchema = v.strictObject({
  id: v.pipe(v.string(), v.regex(/^resp_[A-Za-z0-9_-]{1,200}$/, 'must be a response id (resp_…)')),
})

/**
 * `GET /responses/{id}`: no query. A stored response is read whole; OpenAI's `stream` and `starting_after` replay a
 * background run's events, which this gateway does not keep, so they are refused as any unknown field.
 */
export const GetResponseQuerySchema = v.strictObject({})

/** OpenAI's paging of input items: `after` / `before` an item id, `limit` 1..100 (default 20), `order` (default desc). */
export const ListInputItemsQuerySchema = v.strictObject({
  after: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  before: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  limit: v.optional(integerQuery(1, INPUT_ITEMS_PAGE_MAX), '20'),
  order: v.optional(v.picklist(['asc', 'desc'], 'must be asc or desc'), 'desc'),
})
