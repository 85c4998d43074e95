import * as v from 'valibot'
import { integerQuery } from '../core/validation'

/** Larger than any catalog shipped or configured so far; `@openrouter/sdk` pages by 500. */
export const MODELS_PAGE_MAX = 1_000

/** Longest `q` accepted: a model name or slug, with room to spare. */
export const MODELS_SEARCH_MAX = 200

/**
 * OpenRouter's `output_modalities` values; `all` turns the filter off. Kinds no catalog model produces here
 * (embeddings, rerank, speech, …) are valid filters that match nothing.
 */
export const OUTPUT_MODALITY_FILTERS = ['text', 'image', 'audio', 'video', 'embeddings', 'rerank', 'speech', 'transcription', 'decisions', 'all'] as const

/** OpenRouter's `input_modalities` values, which are the catalog's (src/engine/models.ts `Modality`). */
export const INPUT_MODALITY_FILTERS = ['text', 'image', 'audio', 'file', 'video'] as const

/**
 * The `sort` orders the catalog's own data decides, and the two speed orders the gateway's measurements decide
 * (docs/decisions.md, "Model and provider catalog").
 */
export const MODEL_SORTS = ['pricing-low-to-high', 'pricing-high-to-low', 'context-high-to-low', 'newest', 'throughput-high-to-low', 'latency-low-to-high'] as const

/** OpenRouter's orders that need usage rankings or benchmark scores this gateway does not have. */
const UNKNOWABLE_SORTS = [
  'most-popular',
  'top-weekly',
  'intelligence-high-to-low',
  'coding-high-to-low',
  'agentic-high-to-low',
  'design-arena-elo-high-to-low',
]

const commaList = <T extends v.GenericSchema<string, string>>(item: T) =>
  v.pipe(
    v.string(),
    v.transform((value) => value.split(',').map((part) => part.trim())),
    v.array(item),
  )

const ParameterNameSchema = v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_]*$/, 'must be a comma-separated list of parameter names'))

const SlugSchema = v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9._-]{0,99}$/i, 'must be a comma-separated list of slugs'))

const ProviderNameSchema = v.pipe(v.string(), v.minLength(1, 'must be a comma-separated list of provider slugs or names'), v.maxLength(100, 'names must be at most 100 characters'))

/** A non-negative decimal number (a price in USD per million tokens). */
const decimalQuery = () =>
  v.pipe(
    v.string(),
    v.regex(/^\d{1,12}(\.\d{1,12})?$/, 'must be a non-negative decimal number'),
    v.transform(Number),
  )

/** OpenRouter filters whose data (usage rankings, benchmarks, regions, licences) this gateway does not have. */
const unknowable = (what: string) => v.optional(v.custom<never>(() => false, `cannot be applied: this gateway has no ${what}`))

const SortSchema = v.pipe(
  v.string(),
  v.check((sort) => !UNKNOWABLE_SORTS.includes(sort), 'cannot be applied: this gateway keeps no usage rankings or benchmark scores to sort by'),
  v.picklist(MODEL_SORTS, `must be one of ${MODEL_SORTS.join(', ')}`),
)

// Strict: a filter this route does not know is a 400 naming it, not a silently wider list.
export const ListModelsQuerySchema = v.pipe(
  v.strictObject(
    {
      supported_parameters: v.optional(commaList(ParameterNameSchema)),
      output_modalities: v.optional(
        commaList(v.picklist(OUTPUT_MODALITY_FILTERS, `must be a comma-separated list of ${OUTPUT_MODALITY_FILTERS.join(', ')}`)),
        'text',
      ),
      input_modalities: v.optional(commaList(v.picklist(INPUT_MODALITY_FILTERS, `must be a comma-separated list of ${INPUT_MODALITY_FILTERS.join(', ')}`))),
      q: v.optional(v.pipe(v.string(), v.trim(), v.maxLength(MODELS_SEARCH_MAX, `must be at most ${MODELS_SEARCH_MAX} characters`))),
      context: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER)),
      min_price: v.optional(decimalQuery()),
      max_price: v.optional(decimalQuery()),
      min_output_price: v.optional(decimalQuery()),
      max_output_price: v.optional(decimalQuery()),
      model_authors: v.optional(commaList(SlugSchema)),
      providers: v.optional(commaList(ProviderNameSchema)),
      arch: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(100, 'must be at most 100 characters'))),
      zdr: v.optional(v.literal('true', 'must be true (leave it out for every model)')),
      min_age_days: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER)),
      max_age_days: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER)),
      sort: v.optional(SortSchema),
      offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
      limit: v.optional(integerQuery(1, MODELS_PAGE_MAX)),
      category: unknowable("use-case categories (OpenRouter's come from its usage rankings)"),
      // Whether the model's terms allow training other models on its output, as the catalog states it (`isDistillable`).
      distillable: v.optional(v.picklist(['true', 'false'], 'must be true or false')),
      region: unknowable('data regions for its endpoints'),
      min_intelligence_index: unknowable('benchmark scores'),
      max_intelligence_index: unknowable('benchmark scores'),
      min_coding_index: unknowable('benchmark scores'),
      max_coding_index: unknowable('benchmark scores'),
      min_agentic_index: unknowable('benchmark scores'),
      max_agentic_index: unknowable('benchmark scores'),
      min_tool_success_rate: unknowable('tool-calling statistics'),
      max_tool_success_rate: unknowable('tool-calling statistics'),
    },
  ),
  v.check((query) => query.min_price === undefined || query.max_price === undefined || query.min_price <= query.max_price, 'min_price is above max_price'),
  v.check(
    (query) => query.min_output_price === undefined || query.max_output_price === undefined || query.min_output_price <= query.max_output_price,
    'min_output_price is above max_output_price',
  ),
  v.check(
    (query) => query.min_age_days === undefined || query.max_age_days === undefined || query.min_age_days <= query.max_age_days,
    'min_age_days is above max_age_days',
  ),
)
export type ListModelsQuery = v.InferOutput<typeof ListModelsQuerySchema>

// The halves of a model slug (core/patterns MODEL_SLUG_PATTERN); the second may carry a `:variant`.
const SlugPartSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9~._:@+-]+$/, 'must be part of a model slug'), v.maxLength(200, 'must be at most 200 characters'))

/** A model's path (`/models/{author}/{slug}` and its `/endpoints`). */
export const ModelParamsSchema = v.strictObject({ author: SlugPartSchema, slug: SlugPartSchema })

/** `GET /models/count`: the one filter OpenRouter's count takes. */
export const CountModelsQuerySchema = v.strictObject(
  {
    output_modalities: v.optional(
      commaList(v.picklist(OUTPUT_MODALITY_FILTERS, `must be a comma-separated list of ${OUTPUT_MODALITY_FILTERS.join(', ')}`)),
      'text',
    ),
  },
)

/** `GET /models/user`: OpenRouter's paging and modality filter, as `GET /models` reads them. */
export const ListUserModelsQuerySchema = v.strictObject(
  {
    output_modalities: v.optional(
      commaList(v.picklist(OUTPUT_MODALITY_FILTERS, `must be a comma-separated list of ${OUTPUT_MODALITY_FILTERS.join(', ')}`)),
      'text',
    ),
    offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
    limit: v.optional(integerQuery(1, MODELS_PAGE_MAX)),
  },
)
