import * as v from 'valibot'
import { integerQuery } from '../core/validation'

/** Larger than any catalog shipped or configured so far; `@openrouter/sdk` pages by 500. */
export const MODELS_PAGE_MAX = 1_000

/** OpenRouter's `output_modalities` values; `all` turns the filter off. */
export const OUTPUT_MODALITY_FILTERS = ['text', 'image', 'audio', 'video', 'embeddings', 'all'] as const

const commaList = <T extends v.GenericSchema<string, string>>(item: T) =>
  v.pipe(
    v.string(),
    v.transform((value) => value.split(',').map((part) => part.trim())),
    v.array(item),
  )

const ParameterNameSchema = v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_]*$/, 'must be a comma-separated list of parameter names'))

// Strict: a filter this route does not apply (`category`, `sort`, …) is a 400 naming it, not a silently wider list.
export const ListModelsQuerySchema = v.strictObject(
  {
    supported_parameters: v.optional(commaList(ParameterNameSchema)),
    output_modalities: v.optional(
      commaList(v.picklist(OUTPUT_MODALITY_FILTERS, `must be a comma-separated list of ${OUTPUT_MODALITY_FILTERS.join(', ')}`)),
      'text',
    ),
    offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
    limit: v.optional(integerQuery(1, MODELS_PAGE_MAX)),
  },
  'is not a supported parameter',
)
export type ListModelsQuery = v.InferOutput<typeof ListModelsQuerySchema>

// The halves of a model slug (core/patterns MODEL_SLUG_PATTERN); the second may carry a `:variant`.
const SlugPartSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9~._:@+-]+$/, 'must be part of a model slug'), v.maxLength(200, 'must be at most 200 characters'))

export const ModelEndpointsParamsSchema = v.object({ author: SlugPartSchema, slug: SlugPartSchema })

// Neither route takes options: anything in the query is a mistake worth naming.
export const NoQuerySchema = v.strictObject({}, 'is not a supported parameter')
