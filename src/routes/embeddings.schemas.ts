import * as v from 'valibot'
import { boundedJson, integer, integerQuery } from '../core/validation'
import { MODELS_PAGE_MAX } from './models.schemas'
import { ModelSlugSchema, ProviderPreferencesSchema, SESSION_ID_MAX, USER_MAX } from '../engine/request.schemas'

/** OpenAI's limit on one request's inputs. */
export const EMBEDDINGS_INPUTS_MAX = 2048
/** Longest `input_type` (a task name such as `search_document`). */
export const INPUT_TYPE_MAX = 64
/** Largest `dimensions` any catalog model produces (text-embedding-3-large: 3072), with room to spare. */
export const EMBEDDING_DIMENSIONS_MAX = 16_384

const TextSchema = v.pipe(v.string(), v.minLength(1, 'must not be empty'))
const TokenSchema = v.pipe(v.number(), v.integer('must be token ids (integers)'), v.minValue(0, 'must be token ids (integers from 0)'))
const TokensSchema = v.pipe(v.array(TokenSchema), v.minLength(1, 'must not be empty'))
const batch = <T extends v.GenericSchema>(item: T) =>
  v.pipe(v.array(item), v.minLength(1, 'must not be empty'), v.maxLength(EMBEDDINGS_INPUTS_MAX, `must hold at most ${EMBEDDINGS_INPUTS_MAX} inputs`))

/** OpenRouter's multimodal input (`[{content: [parts]}]`), recognised only to be refused by name. */
const isContentItems = (input: unknown) => Array.isArray(input) && input.length > 0 && typeof input[0] === 'object' && input[0] !== null && !Array.isArray(input[0])

/** One text, texts, one token id array, or token id arrays; normalised to a list (one vector per item). */
const InputSchema = v.pipe(
  v.unknown(),
  v.check((input) => !isContentItems(input), 'multimodal content items are not embedded by this gateway; send text or token ids'),
  v.union(
    [
      v.pipe(TextSchema, v.transform((text) => [text])),
      batch(TextSchema),
      v.pipe(TokensSchema, v.transform((tokens) => [tokens])),
      batch(TokensSchema),
    ],
    'must be a string, an array of strings, an array of token ids or an array of token id arrays',
  ),
)

/** OpenAI's embeddings request, with OpenRouter's `provider`, `input_type`, `session_id` and `trace`. */
export const EmbeddingsBodySchema = v.strictObject(
  {
    model: ModelSlugSchema,
    input: InputSchema,
    encoding_format: v.optional(v.picklist(['float', 'base64'], 'must be "float" or "base64"'), 'float'),
    dimensions: v.optional(integer(1, EMBEDDING_DIMENSIONS_MAX)),
    input_type: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(INPUT_TYPE_MAX, `must be at most ${INPUT_TYPE_MAX} characters`))),
    user: v.optional(v.pipe(v.string(), v.maxLength(USER_MAX, `must be at most ${USER_MAX} characters`))),
    provider: v.optional(v.nullable(ProviderPreferencesSchema)),
    session_id: v.optional(v.pipe(v.string(), v.maxLength(SESSION_ID_MAX, `must be at most ${SESSION_ID_MAX} characters`))),
    trace: v.optional(boundedJson(v.record(v.string(), v.unknown()))),
  },
)

/** `GET /embeddings/models`: the paging the SDK sends (`offset`, `limit`; it asks for 500 by default). */
export const EmbeddingModelsQuerySchema = v.strictObject(
  {
    offset: v.optional(integerQuery(0, Number.MAX_SAFE_INTEGER), '0'),
    limit: v.optional(integerQuery(1, MODELS_PAGE_MAX)),
  },
)
