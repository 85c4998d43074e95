/** Params and queries of the stored-response routes (`/responses/{id}`, `/responses/{id}/input_items`). */

import * as v from 'valibot'
import { integerQuery } from '../core/validation'

export const INPUT_ITEMS_PAGE_MAX = 100

export const ResponseParamsSchema = v.strictObject({
  id: v.pipe(v.string(), v.regex(/^resp_[A-Za-z0-9_-]{1,200}$/, 'must be a response id (resp_…)')),
})

/** Highest `starting_after`: more events than a run has. */
export const STARTING_AFTER_MAX = 1_000_000_000

/**
 * `GET /responses/{id}`: OpenAI's `stream` replays a background run's events (those after `starting_after`) and follows
 * the run to its end (docs/decisions.md, Background runs); a response not run in the background has no events kept.
 */
export const GetResponseQuerySchema = v.pipe(
  v.strictObject({
    stream: v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'false'),
    starting_after: v.optional(integerQuery(0, STARTING_AFTER_MAX)),
  }),
  v.forward(
    v.check((query) => query.starting_after === undefined || query.stream === 'true', 'is read only with stream=true'),
    ['starting_after'],
  ),
)

/** OpenAI's paging of input items: `after` / `before` an item id, `limit` 1..100 (default 20), `order` (default desc). */
export const ListInputItemsQuerySchema = v.strictObject({
  after: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  before: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'))),
  limit: v.optional(integerQuery(1, INPUT_ITEMS_PAGE_MAX), '20'),
  order: v.optional(v.picklist(['asc', 'desc'], 'must be asc or desc'), 'desc'),
})
