/**
 * `POST /chat/completions` body: OpenAI's Chat Completions request with OpenRouter's additions
 * (docs/decisions.md, POST /chat/completions). Every declared field is translated into the engine's
 * request (src/formats/chat-completions/translate.ts) or refused here with a 400 naming it; unknown
 * top-level fields are ignored, as on `/responses`.
 */

import * as v from 'valibot'
import { boundedJson, integer, sparseLooseObject, unknownFieldsRefused } from '../../core/validation'
import { isServerToolEntry, ServerToolEntrySchema, type ServerToolEntry } from '../shared/server-tool.schemas'
import { OPENROUTER_REQUEST_ENTRIES } from '../shared/openrouter-fields'
import {
  FunctionNameSchema,
  IMAGE_CONFIG_WITHOUT_IMAGES,
  isImageConfigUsable,
  MetadataSchema,
  ModelSlugSchema,
  PresetSlugSchema,
  RequestModelSchema,
  MODELS_MAX,
  SchemaNameSchema,
  USER_MAX,
  nullableNumber,
} from '../../engine/request.schemas'

export const MESSAGES_MAX = 10_000
export const TOOLS_MAX = 256
/** OpenAI's limits: at most 4 stop sequences, 20 alternatives per token. */
export const STOP_SEQUENCES_MAX = 4
export const TOP_LOGPROBS_MAX = 20
export const LOGIT_BIAS_LIMIT = 100

const REASONING_EFFORTS = ['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none'] as const

const CacheControlSchema = v.object({ type: v.literal('ephemeral'), ttl: v.optional(v.string()) })

const TextPartSchema = v.object({ type: v.literal('text'), text: v.string(), cache_control: v.optional(CacheControlSchema) })

const ImagePartSchema = v.object({
  type: v.literal('image_url'),
  image_url: v.object({ url: v.pipe(v.string(), v.minLength(1, 'must not be empty')), detail: v.optional(v.picklist(['auto', 'low', 'high'])) }),
})

const FilePartSchema = v.object({
  type: v.literal('file'),
  file: v.pipe(
    v.object({ file_data: v.optional(v.string()), file_id: v.optional(v.string()), filename: v.optional(v.string()) }),
    v.check((file) => file.file_data !== undefined || file.file_id !== undefined, 'needs file_data (a data: URL or an https URL) or file_id'),
  ),
})

const AudioPartSchema = v.object({
  type: v.literal('input_audio'),
  input_audio: v.object({ data: v.string(), format: v.pipe(v.string(), v.minLength(1, 'must not be empty')) }),
})

const UserPartSchema = v.variant('type', [TextPartSchema, ImagePartSchema, FilePartSchema, AudioPartSchema], 'must be a text, image_url, file or input_audio part')

const RefusalPartSchema = v.object({ type: v.literal('refusal'), refusal: v.string() })

// Chosen by the value's kind, so a part's own error is not swallowed by a string-or-array union.
const stringOrParts = <S extends v.GenericSchema>(part: S, message: string) =>
  v.lazy((content: unknown) => (typeof content === 'string' ? v.string() : v.array(part, message)))

const textContent = (role: string) =>
  stringOrParts(v.variant('type', [TextPartSchema], `must be a text part: ${role} messages hold text only`), 'must be a string or an array of text parts')

const ToolCallSchema = v.object({
  id: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  type: v.literal('function'),
  function: v.object({ name: v.pipe(v.string(), v.minLength(1, 'must not be empty')), arguments: v.string() }),
})

/** OpenRouter's reasoning blocks as they come back in an assistant turn, so signed reasoning round-trips. */
const ReasoningDetailSchema = v.variant(
  'type',
  [
    v.object({ type: v.literal('reasoning.text'), text: v.optional(v.nullable(v.string())), signature: v.optional(v.nullable(v.string())), format: v.optional(v.nullable(v.string())) }),
    v.object({ type: v.literal('reasoning.summary'), summary: v.string(), format: v.optional(v.nullable(v.string())) }),
    v.object({ type: v.literal('reasoning.encrypted'), data: v.string(), format: v.optional(v.nullable(v.string())) }),
  ],
  'must be a reasoning.text, reasoning.summary or reasoning.encrypted detail',
)

/** A `data:` URL of a base64 image: what the gateway returned on `message.images`, and all it can send back. */
export const IMAGE_DATA_URL = /^data:image\/([\w.+-]+);base64,([A-Za-z0-9+/=]+)$/

/** An image the assistant generated earlier (OpenRouter's `message.images`), sent back with its turn. */
const AssistantImageSchema = v.object({
  type: v.optional(v.literal('image_url')),
  image_url: v.object({ url: v.pipe(v.string(), v.regex(IMAGE_DATA_URL, 'must be a data:image/…;base64 URL, as generated images are returned')) }),
})

const MessageSchema = v.variant(
  'role',
  [
    v.object({ role: v.literal('system'), content: textContent('system') }),
    v.object({ role: v.literal('developer'), content: textContent('developer') }),
    v.object({
      role: v.literal('user'),
      content: stringOrParts(UserPartSchema, 'must be a string or an array of content parts'),
    }),
    v.object({
      role: v.literal('assistant'),
      content: v.optional(
        v.nullable(stringOrParts(v.variant('type', [TextPartSchema, RefusalPartSchema], 'must be a text or refusal part'), 'must be a string or an array of text and refusal parts')),
      ),
      refusal: v.optional(v.nullable(v.string())),
      tool_calls: v.optional(v.nullable(v.array(ToolCallSchema))),
      reasoning: v.optional(v.nullable(v.string())),
      reasoning_details: v.optional(v.nullable(v.array(ReasoningDetailSchema))),
      images: v.optional(v.nullable(v.array(AssistantImageSchema))),
    }),
    v.object({ role: v.literal('tool'), tool_call_id: v.pipe(v.string(), v.minLength(1, 'must not be empty')), content: textContent('tool') }),
  ],
  'must have a role among system, developer, user, assistant, tool',
)

const FunctionToolSchema = v.strictObject({
  type: v.literal('function', 'must be "function" or a server tool ("service:…")'),
  function: v.strictObject({
    name: FunctionNameSchema,
    description: v.optional(v.nullable(v.string())),
    parameters: v.optional(v.nullable(boundedJson(v.record(v.string(), v.unknown())))),
    strict: v.optional(v.nullable(v.boolean())),
  }),
})

// Chosen by `type`, so a function tool's own error names its field; server tools go to the engine's plan.
const ToolSchema = v.lazy((tool: unknown) => (isServerToolEntry(tool) ? (ServerToolEntrySchema as unknown as typeof FunctionToolSchema) : FunctionToolSchema)) as unknown as v.GenericSchema<
  unknown,
  v.InferOutput<typeof FunctionToolSchema> | ServerToolEntry
>

const ToolChoiceSchema = v.union(
  [v.picklist(['auto', 'none', 'required']), v.strictObject({ type: v.literal('function'), function: v.strictObject({ name: FunctionNameSchema }) })],
  'must be "auto", "none", "required" or {type: "function", function: {name}}',
)

const ResponseFormatSchema = v.variant(
  'type',
  [
    v.strictObject({ type: v.literal('text') }),
    v.strictObject({ type: v.literal('json_object') }),
    v.strictObject({
      type: v.literal('json_schema'),
      json_schema: v.strictObject({
        name: SchemaNameSchema,
        schema: boundedJson(v.record(v.string(), v.unknown())),
        description: v.optional(v.string()),
        strict: v.optional(v.nullable(v.boolean())),
      }),
    }),
  ],
  'must be a text, json_object or json_schema format',
)

const ReasoningSchema = v.strictObject({
  effort: v.optional(v.nullable(v.picklist(REASONING_EFFORTS))),
  max_tokens: v.optional(v.nullable(integer(0))),
  exclude: v.optional(v.boolean()),
  enabled: v.optional(v.boolean()),
})

const StopSequenceSchema = v.pipe(v.string(), v.minLength(1, 'must not be empty'))

// By the value's kind, so an item's own error is not swallowed by a string-or-array union.
const StopSchema = v.lazy((stop: unknown) =>
  typeof stop === 'string'
    ? StopSequenceSchema
    : v.pipe(
        v.array(StopSequenceSchema, 'must be a string or an array of strings'),
        v.maxLength(STOP_SEQUENCES_MAX, `at most ${STOP_SEQUENCES_MAX} stop sequences`),
      ),
)

const LogitBiasSchema = v.record(
  v.pipe(v.string(), v.regex(/^\d{1,10}$/, 'keys must be token ids (digits)')),
  v.pipe(
    v.number(),
    v.minValue(-LOGIT_BIAS_LIMIT, `values must be at least -${LOGIT_BIAS_LIMIT}`),
    v.maxValue(LOGIT_BIAS_LIMIT, `values must be at most ${LOGIT_BIAS_LIMIT}`),
  ),
)

/** OpenAI's tiers and the spec's `fast` (an alias of `priority`). */
const SERVICE_TIERS = ['auto', 'default', 'fast', 'flex', 'priority', 'scale'] as const

/** A field no endpoint can honour: a 400 naming it, whatever its value (null and absent pass). */
const refusedField = (reason: string) => v.optional(v.nullable(v.custom<never>(() => false, `is not supported: ${reason}`)))

const ChatCompletionsEntries = {
    model: v.optional(RequestModelSchema),
    models: v.optional(v.pipe(v.array(ModelSlugSchema), v.maxLength(MODELS_MAX, `at most ${MODELS_MAX} models`))),
    preset: v.optional(PresetSlugSchema),
    messages: v.pipe(v.array(MessageSchema), v.minLength(1, 'must have at least 1 message'), v.maxLength(MESSAGES_MAX, `at most ${MESSAGES_MAX} messages`)),
    tools: v.optional(v.nullable(v.pipe(v.array(ToolSchema), v.maxLength(TOOLS_MAX, `at most ${TOOLS_MAX} tools`)))),
    tool_choice: v.optional(v.nullable(ToolChoiceSchema)),
    parallel_tool_calls: v.optional(v.nullable(v.boolean())),
    response_format: v.optional(v.nullable(ResponseFormatSchema)),
    reasoning: v.optional(v.nullable(ReasoningSchema)),
    reasoning_effort: v.optional(v.nullable(v.picklist(REASONING_EFFORTS))),
    temperature: nullableNumber(0, 2),
    top_p: nullableNumber(0, 1),
    top_k: v.optional(v.nullable(integer(0))),
    frequency_penalty: nullableNumber(-2, 2),
    presence_penalty: nullableNumber(-2, 2),
    max_tokens: v.optional(v.nullable(integer(1))),
    max_completion_tokens: v.optional(v.nullable(integer(1))),
    // spec: one choice per request; other counts cannot be honoured by every provider.
    n: v.optional(v.nullable(v.literal(1, 'must be 1: one choice per request'))),
    // Carried beside the engine's request (translate.ts toExtensions); routing picks endpoints that send them.
    logprobs: v.optional(v.nullable(v.boolean())),
    top_logprobs: v.optional(v.nullable(integer(0, TOP_LOGPROBS_MAX))),
    stop: v.optional(v.nullable(StopSchema)),
    seed: v.optional(v.nullable(integer(Number.MIN_SAFE_INTEGER))),
    logit_bias: v.optional(v.nullable(LogitBiasSchema)),
    stream: v.optional(v.nullable(v.boolean())),
    // OpenRouter: usage is always sent, so both switches are read and change nothing.
    stream_options: v.optional(v.nullable(v.strictObject({ include_usage: v.optional(v.nullable(v.boolean())) }))),
    usage: v.optional(v.nullable(v.strictObject({ include: v.optional(v.nullable(v.boolean())) }))),
    user: v.optional(v.pipe(v.string(), v.maxLength(USER_MAX, `must be at most ${USER_MAX} characters`))),
    ...OPENROUTER_REQUEST_ENTRIES,
    metadata: v.optional(v.nullable(MetadataSchema)),
    // Forwarded where an endpoint's adapter sends the tier; another than auto or default routes only there.
    service_tier: v.optional(v.nullable(v.picklist(SERVICE_TIERS))),
    // OpenAI's `text.verbosity`, as Chat Completions spells it.
    verbosity: v.optional(v.nullable(v.picklist(['low', 'medium', 'high']))),
    // OpenAI's search options: the web plugin with the caller's location (chat-completions.translate.ts).
    web_search_options: v.optional(
      v.nullable(
        v.strictObject({
          search_context_size: refusedField('the web plugin sets no search context size; use plugins: [{"id": "web", "max_results": …}]'),
          user_location: v.optional(
            v.nullable(
              v.strictObject({
                type: v.literal('approximate'),
                approximate: v.strictObject({
                  city: v.optional(v.nullable(v.string())),
                  country: v.optional(v.nullable(v.string())),
                  region: v.optional(v.nullable(v.string())),
                  timezone: v.optional(v.nullable(v.string())),
                }),
              }),
            ),
          ),
        }),
      ),
    ),
    // Nothing is stored, and no endpoint is asked to predict.
    store: v.optional(v.nullable(v.literal(false, 'must be false: completions are not stored'))),
    prediction: refusedField('predicted outputs are not sent to any provider through this gateway'),
}

export const ChatCompletionsRequestSchema = v.pipe(
  sparseLooseObject(ChatCompletionsEntries),
  // Every field has its effect or a 400 naming it, unknown ones too (docs/decisions.md, POST /chat/completions).
  unknownFieldsRefused<v.InferOutput<v.LooseObjectSchema<typeof ChatCompletionsEntries, undefined>>>(ChatCompletionsEntries),
  v.check(
    (body) => body.max_tokens == null || body.max_completion_tokens == null || body.max_tokens === body.max_completion_tokens,
    'max_tokens and max_completion_tokens disagree: send one of them',
  ),
  v.check(
    (body) => body.reasoning?.effort == null || body.reasoning_effort == null || body.reasoning.effort === body.reasoning_effort,
    'reasoning.effort and reasoning_effort disagree: send one of them',
  ),
  v.check((body) => !body.top_logprobs || body.logprobs === true, 'top_logprobs needs logprobs: true'),
  v.check((body) => isImageConfigUsable(body), IMAGE_CONFIG_WITHOUT_IMAGES),
)

export type ChatCompletionsRequest = v.InferOutput<typeof ChatCompletionsRequestSchema>
export type ChatMessage = ChatCompletionsRequest['messages'][number]
export type ChatUserPart = v.InferOutput<typeof UserPartSchema>
