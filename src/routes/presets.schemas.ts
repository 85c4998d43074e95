import * as v from 'valibot'
import { integerQuery } from '../core/validation'
import { PresetSlugSchema } from '../engine/request.schemas'

export const PRESETS_PAGE_MAX = 100

export const PresetParamsSchema = v.strictObject({ slug: PresetSlugSchema })

export const PresetVersionParamsSchema = v.strictObject({
  slug: PresetSlugSchema,
  version: v.pipe(v.string(), v.regex(/^[1-9]\d{0,8}$/, 'must be a version number from 1'), v.transform(Number)),
})

/** OpenRouter's paging (`offset`, `limit` 1..100, default 50); anything else is refused by name. */
export const ListPresetsQuerySchema = v.strictObject({
  offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
  limit: v.optional(integerQuery(1, PRESETS_PAGE_MAX), '50'),
})
