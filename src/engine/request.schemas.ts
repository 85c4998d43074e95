/**
 * `POST /responses` body (spec: Response request), with every rule and limit of the spec and the
 * enumerations docs/decisions.md fills in. Unknown top-level fields are ignored, as the public counterpart does.
 * Free-form JSON (tool parameters, schemas, fields passed through to upstreams) nests at most
 * `MAX_JSON_DEPTH` levels, so nothing downstream meets a value too deep to serialize.
 */

import * as v from 'valibot'
import { MODEL_SLUG_MAX, MODEL_SLUG_PATTERN } from '../core/patterns'
import { boundedJson, integer, ModelSlugSchema, passThroughObject, sparseLooseObject } from '../core/validation'

export { ModelSlugSchema }

// spec Limits.
export const METADATA_MAX_PAIRS = 16
export const METADATA_KEY_MAX = 64
export const METADATA_VALUE_MAX = 512
export const SESSION_ID_MAX = 256
export const USER_MAX = 256
export const MAX_TOOL_CALLS_MAX = 30
export const MODELS_MAX = 16

/** A preset's slug (OpenRouter: URL-safe): lowercase letters, digits, `-` and `_`. */
export const PRESET_SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$/
export const PresetSlugSchema = v.pipe(v.string(), v.regex(PRESET_SLUG_PATTERN, 'must be a preset slug: 1 to 64 lowercase letters, digits, - or _'))

// `@preset/<slug>` already has a model slug's shape; `<model>@preset/<slug>` has two slashes.
const MODEL_WITH_PRESET_PATTERN = /^[A-Za-z0-9~._:@+-]+\/[A-Za-z0-9~._:+-]+@preset\/[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$/

/** A request's `model`: a model slug, or a preset (`@preset/<slug>`, `<model>@preset/<slug>`; docs/decisions.md, Presets). */
export const RequestModelSchema = v.pipe(
  v.string(),
  v.maxLength(MODEL_SLUG_MAX, `must be at most ${MODEL_SLUG_MAX} characters`),
  v.check((model) => MODEL_SLUG_PATTERN.test(model) || MODEL_WITH_PRESET_PATTERN.test(model), 'must be a model slug <author>/<name>'),
)

export const nullableNumber = (minimum: number, maximum: number) =>
  v.optional(v.nullable(v.pipe(v.number(), v.minValue(minimum, `must be at least ${minimum}`), v.maxValue(maximum, `must be at most ${maximum}`))))

// ---- input items (docs/decisions.md, POST /responses) ----

const ImageDetailSchema = v.optional(v.picklist(['auto', 'low', 'high']))

/** Marks the end of a prefix to cache (`prompt_cache_options`); its TTL is the request's. */
const PromptCacheBreakpointSchema = v.optional(v.strictObject({ mode: v.literal('explicit', 'must be "explicit"') }))

const InputPartSchema = v.variant('type', [
  passThroughObject({ type: v.literal('input_text'), text: v.string(), prompt_cache_breakpoint: PromptCacheBreakpointSchema }),
  passThroughObject({
    type: v.literal('input_image'),
    image_url: v.optional(v.nullable(v.string())),
    file_id: v.optional(v.nullable(v.string())),
    detail: ImageDetailSchema,
    prompt_cache_breakpoint: PromptCacheBreakpointSchema,
  }),
  passThroughObject({
    type: v.literal('input_file'),
    prompt_cache_breakpoint: PromptCacheBreakpointSchema,
    file_data: v.optional(v.string()),
    file_url: v.optional(v.string()),
    file_id: v.optional(v.nullable(v.string())),
    filename: v.optional(v.string()),
  }),
  passThroughObject({ type: v.literal('input_audio') }),
  passThroughObject({ type: v.literal('input_video') }),
  passThroughObject({ type: v.literal('output_text'), text: v.string(), annotations: v.optional(boundedJson(v.array(v.unknown()))) }),
  passThroughObject({ type: v.literal('refusal'), refusal: v.string() }),
  passThroughObject({ type: v.literal('reasoning_text'), text: v.string() }),
  passThroughObject({ type: v.literal('summary_text'), text: v.string() }),
])

const MessageItemSchema = passThroughObject({
  type: v.optional(v.literal('message')),
  role: v.picklist(['user', 'assistant', 'system', 'developer'], 'must be one of user, assistant, system, developer'),
  content: v.union([v.string(), v.array(InputPartSchema)], 'must be a string or an array of content parts'),
  id: v.optional(v.string()),
  status: v.optional(v.string()),
})

const FunctionCallItemSchema = passThroughObject({
  type: v.literal('function_call'),
  call_id: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  name: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  arguments: v.string(),
  id: v.optional(v.string()),
  status: v.optional(v.string()),
})

const FunctionCallOutputItemSchema = passThroughObject({
  type: v.literal('function_call_output'),
  call_id: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  output: v.union([v.string(), v.array(InputPartSchema)]),
  id: v.optional(v.nullable(v.string())),
  status: v.optional(v.nullable(v.string())),
})

const ReasoningItemSchema = passThroughObject({
  type: v.literal('reasoning'),
  id: v.optional(v.string()),
  summary: v.optional(v.array(passThroughObject({ type: v.string(), text: v.string() })), []),
  content: v.optional(v.nullable(v.array(passThroughObject({ type: v.string(), text: v.string() })))),
  encrypted_content: v.optional(v.nullable(v.string())),
  signature: v.optional(v.nullable(v.string())),
  format: v.optional(v.nullable(v.string())),
  status: v.optional(v.string()),
})

/**
 * Items we translate are checked in detail; other kinds pass through for adapters that know them.
 * Chosen by `type` (a message may omit it), so an error names the field at fault, e.g.
 * `body.input.0.role`, not the type of an item that was fine.
 */
const InputItemSchema = v.variant(
  'type',
  [
    MessageItemSchema,
    FunctionCallItemSchema,
    FunctionCallOutputItemSchema,
    ReasoningItemSchema,
    passThroughObject({
      type: v.pipe(
        v.string(),
        v.check((type) => !['message', 'function_call', 'function_call_output', 'reasoning'].includes(type)),
      ),
    }),
  ],
  'must be an input item (message, function_call, function_call_output, reasoning, …)',
)

// ---- tools (docs/decisions.md, POST /responses) ----

export const FunctionNameSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'must be 1 to 128 letters, digits, _ . : or -'))

const FunctionToolSchema = passThroughObject({
  type: v.literal('function'),
  name: FunctionNameSchema,
  description: v.optional(v.nullable(v.string())),
  parameters: v.optional(v.nullable(boundedJson(v.record(v.string(), v.unknown())))),
  strict: v.optional(v.nullable(v.boolean())),
  async: v.optional(v.boolean()),
  defer_loading: v.optional(v.boolean()),
})

/** The gateway's own server tools' prefix (OpenRouter's `openrouter:`, renamed by the spec). */
const SERVER_TOOL_PREFIX = 'service:'
const OPENROUTER_TOOL_PREFIX = 'openrouter:'

/**
 * `openrouter:<tool>` is the spec's `service:<tool>` as OpenRouter names it, and the only name OpenRouter's SDK
 * lets a caller send: taken as the same tool, so every later step sees one name.
 */
export const withServerToolName = <T extends { type: string }>(tool: T): T =>
  tool.type.startsWith(OPENROUTER_TOOL_PREFIX) ? { ...tool, type: `${SERVER_TOOL_PREFIX}${tool.type.slice(OPENROUTER_TOOL_PREFIX.length)}` } : tool

// Chosen by `type`, so a bad function tool reports its own field (`body.tools.0.name`).
const ToolSchema = v.variant(
  'type',
  [
    FunctionToolSchema,
    v.pipe(passThroughObject({ type: v.pipe(v.string(), v.minLength(1), v.check((type) => type !== 'function')) }), v.transform(withServerToolName)),
  ],
  'must be a tool object with a type',
)

const ToolChoiceSchema = v.union(
  [
    v.picklist(['auto', 'none', 'required']),
    passThroughObject({ type: v.literal('function'), name: v.string() }),
    passThroughObject({ type: v.literal('allowed_tools'), mode: v.picklist(['auto', 'required']), tools: boundedJson(v.array(v.record(v.string(), v.unknown()))) }),
    passThroughObject({ type: v.picklist(['web_search_preview', 'web_search_preview_2025_03_11', 'apply_patch', 'shell']) }),
  ],
  'must be "auto", "none", "required" or a tool choice object',
)

// ---- stop conditions (docs/decisions.md, POST /responses: five kinds) ----

const StopConditionSchema = v.variant(
  'type',
  [
    v.strictObject({ type: v.literal('step_count_is'), step_count: integer(1) }),
    v.strictObject({ type: v.literal('has_tool_call'), tool_name: v.pipe(v.string(), v.minLength(1, 'must not be empty')) }),
    v.strictObject({ type: v.literal('max_tokens_used'), max_tokens: integer(1) }),
    v.strictObject({ type: v.literal('max_cost'), max_cost_in_dollars: v.pipe(v.number(), v.minValue(0, 'must be at least 0')) }),
    v.strictObject({ type: v.literal('finish_reason_is'), reason: v.pipe(v.string(), v.minLength(1, 'must not be empty')) }),
  ],
  'must be one of step_count_is, has_tool_call, max_tokens_used, max_cost, finish_reason_is',
)

// ---- provider preferences (docs/decisions.md, POST /responses) ----

const ProviderSlugListSchema = v.array(v.pipe(v.string(), v.minLength(1, 'must not be empty')))
const PriceSchema = v.union([v.number(), v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/, 'must be a decimal number'))])
const PercentilesSchema = v.union([v.number(), v.strictObject({ p50: v.optional(v.number()), p75: v.optional(v.number()), p90: v.optional(v.number()), p99: v.optional(v.number()) })])
export const PROVIDER_SORTS = ['price', 'throughput', 'latency', 'exacto'] as const

export const ProviderPreferencesSchema = v.strictObject({
  order: v.optional(ProviderSlugListSchema),
  only: v.optional(ProviderSlugListSchema),
  ignore: v.optional(ProviderSlugListSchema),
  allow_fallbacks: v.optional(v.boolean()),
  require_parameters: v.optional(v.boolean()),
  data_collection: v.optional(v.picklist(['allow', 'deny'])),
  zdr: v.optional(v.boolean()),
  enforce_distillable_text: v.optional(v.boolean()),
  quantizations: v.optional(v.array(v.picklist(['int4', 'int8', 'fp4', 'mxfp4', 'nvfp4', 'fp6', 'fp8', 'mxfp8', 'fp16', 'bf16', 'fp32', 'unknown']))),
  sort: v.optional(
    v.union([
      v.picklist(PROVIDER_SORTS),
      v.strictObject({ by: v.picklist(PROVIDER_SORTS), partition: v.optional(v.picklist(['model', 'none'])) }),
    ]),
  ),
  preferred_max_latency: v.optional(PercentilesSchema),
  preferred_min_throughput: v.optional(PercentilesSchema),
  max_price: v.optional(
    v.strictObject({
      prompt: v.optional(PriceSchema),
      completion: v.optional(PriceSchema),
      image: v.optional(PriceSchema),
      audio: v.optional(PriceSchema),
      request: v.optional(PriceSchema),
    }),
  ),
})
export type ProviderPreferences = v.InferOutput<typeof ProviderPreferencesSchema>

// ---- plugins (spec + docs/decisions.md, "Plugins"): each run plugin's schema is in src/features/plugins/ ----

/**
 * A `plugins` entry as the engine reads it: an id, on or off. What each plugin's settings hold is its feature's to
 * check (src/features/plugins/schemas.ts); the body the gateway accepts is composed with that schema above the engine
 * (src/features/request-body.ts), so the engine names no plugin.
 */
const PluginEntrySchema = v.looseObject({ id: v.string(), enabled: v.optional(v.boolean()) })
type PluginEntry = v.InferOutput<typeof PluginEntrySchema>

// ---- text (docs/decisions.md, POST /responses) ----

export const SchemaNameSchema = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -'))

const TextFormatSchema = v.variant('type', [
  v.strictObject({ type: v.literal('text') }),
  v.strictObject({ type: v.literal('json_object') }),
  v.strictObject({
    type: v.literal('json_schema'),
    name: SchemaNameSchema,
    schema: boundedJson(v.record(v.string(), v.unknown())),
    description: v.optional(v.string()),
    strict: v.optional(v.nullable(v.boolean())),
  }),
])

export const MetadataSchema = v.pipe(
  v.record(
    v.pipe(
      v.string(),
      v.maxLength(METADATA_KEY_MAX, `keys must be at most ${METADATA_KEY_MAX} characters`),
      v.regex(/^[^[\]]*$/, 'keys must not contain brackets'),
    ),
    v.pipe(v.string(), v.maxLength(METADATA_VALUE_MAX, `values must be at most ${METADATA_VALUE_MAX} characters`)),
  ),
  v.check((metadata) => Object.keys(metadata).length <= METADATA_MAX_PAIRS, `at most ${METADATA_MAX_PAIRS} pairs`),
)

// ---- image output (docs/decisions.md, image output) ----

/** What the answer may hold. */
export const ModalitiesSchema = v.array(v.picklist(['text', 'image']))

/** Provider-specific image options; each upstream maps the keys it knows and refuses the rest. */
export const ImageConfigSchema = boundedJson(v.record(v.string(), v.union([v.string(), v.number(), v.array(v.unknown())])))

/** `image_config` shapes images, so it needs a request that asks for them. */
export const isImageConfigUsable = (body: { image_config?: unknown; modalities?: readonly string[] | null | undefined }) =>
  body.image_config === undefined || body.image_config === null || body.modalities?.includes('image') === true

export const IMAGE_CONFIG_WITHOUT_IMAGES = 'image_config applies only to a request whose modalities include "image"'

/** The `POST /responses` body, its `plugins` entries checked by `plugin` (the features' schema of them). */
/**
 * `background: true` is `POST /responses`' own (docs/decisions.md, Background runs): that route drops the check with this message and
 * runs the request detached; every other body read as a Responses request (an intern's turn, a preset) refuses it.
 */
export const BACKGROUND_REFUSED = 'background mode is only for POST /responses, with stored responses on'

export const responsesRequestSchema = <const P extends v.GenericSchema<unknown, PluginEntry>>(plugin: P) => v.pipe(
  sparseLooseObject({
    // By the value's kind, so an item's own error is not swallowed by a string-or-array union.
    input: v.lazy((input) =>
      typeof input === 'string' ? v.string() : v.array(InputItemSchema, 'must be a string or an array of input items'),
    ),
    model: v.optional(RequestModelSchema),
    models: v.optional(v.pipe(v.array(ModelSlugSchema), v.maxLength(MODELS_MAX, `at most ${MODELS_MAX} models`))),
    preset: v.optional(PresetSlugSchema),
    instructions: v.optional(v.nullable(v.string())),
    stream: v.optional(v.boolean(), false),
    // docs/decisions.md, Stored responses: whether the answer is stored, and the stored response it continues. The
    // route decides both (a gateway without a response store refuses them); left out, `store` is what the gateway does.
    store: v.optional(v.nullable(v.boolean())),
    previous_response_id: v.optional(v.nullable(v.pipe(v.string('must be a response id (resp_…)'), v.regex(/^resp_[A-Za-z0-9_-]{1,200}$/, 'must be a response id (resp_…)')))),
    background: v.optional(v.nullable(v.boolean())),
    cache_control: v.optional(v.strictObject({ type: v.literal('ephemeral'), ttl: v.optional(v.string()) })),
    debug: v.optional(v.strictObject({ echo_upstream_body: v.optional(v.boolean()) })),
    frequency_penalty: nullableNumber(-2, 2),
    presence_penalty: nullableNumber(-2, 2),
    temperature: nullableNumber(0, 2),
    top_p: nullableNumber(0, 1),
    top_k: v.optional(integer(0)),
    top_logprobs: v.optional(v.nullable(integer(0, 20))),
    max_output_tokens: v.optional(v.nullable(integer(1))),
    max_tool_calls: v.optional(v.nullable(integer(1, MAX_TOOL_CALLS_MAX))),
    stop_server_tools_when: v.optional(v.pipe(v.array(StopConditionSchema), v.minLength(1, 'must have at least 1 condition'))),
    include: v.optional(
      v.nullable(
        v.array(
          v.picklist(
            [
              'file_search_call.results',
              'message.input_image.image_url',
              'computer_call_output.output.image_url',
              'reasoning.encrypted_content',
              'code_interpreter_call.outputs',
            ],
            'must be one of file_search_call.results, message.input_image.image_url, computer_call_output.output.image_url, reasoning.encrypted_content, code_interpreter_call.outputs',
          ),
        ),
      ),
    ),
    image_config: v.optional(ImageConfigSchema),
    metadata: v.optional(v.nullable(MetadataSchema)),
    modalities: v.optional(ModalitiesSchema),
    parallel_tool_calls: v.optional(v.nullable(v.boolean())),
    plugins: v.optional(v.array(plugin)),
    prompt: v.optional(v.strictObject({ id: v.string(), variables: v.optional(boundedJson(v.record(v.string(), v.unknown()))), version: v.optional(v.nullable(v.string())) })),
    prompt_cache_key: v.optional(v.nullable(v.string())),
    prompt_cache_options: v.optional(v.strictObject({ mode: v.optional(v.literal('explicit')), ttl: v.optional(v.string()) })),
    provider: v.optional(v.nullable(ProviderPreferencesSchema)),
    reasoning: v.optional(
      v.nullable(
        v.pipe(
          v.strictObject({
            effort: v.optional(v.nullable(v.picklist(['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none']))),
            summary: v.optional(v.nullable(v.picklist(['auto', 'concise', 'detailed']))),
            // OpenAI's older name for `summary`, still in its SDK's types: read as `summary`, which wins when both are given.
            generate_summary: v.optional(v.nullable(v.picklist(['auto', 'concise', 'detailed']))),
            enabled: v.optional(v.boolean()),
            max_tokens: v.optional(v.nullable(integer(0))),
            mode: v.optional(v.picklist(['standard', 'pro'])),
            context: v.optional(v.picklist(['auto', 'all_turns', 'current_turn'])),
          }),
          v.transform(({ generate_summary, ...reasoning }) =>
            generate_summary == null || reasoning.summary != null ? reasoning : { ...reasoning, summary: generate_summary },
          ),
        ),
      ),
    ),
    route: v.optional(v.nullable(v.picklist(['fallback', 'sort']))),
    safety_identifier: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(USER_MAX, `must be at most ${USER_MAX} characters`)))),
    service_tier: v.optional(v.nullable(v.picklist(['auto', 'default', 'fast', 'flex', 'priority', 'scale'])), 'auto'),
    session_id: v.optional(v.pipe(v.string(), v.maxLength(SESSION_ID_MAX, `must be at most ${SESSION_ID_MAX} characters`))),
    text: v.optional(
      v.nullable(
        v.strictObject({
          format: v.optional(TextFormatSchema),
          verbosity: v.optional(v.nullable(v.picklist(['low', 'medium', 'high', 'xhigh', 'max']))),
        }),
      ),
    ),
    tool_choice: v.optional(ToolChoiceSchema),
    tools: v.optional(v.pipe(v.array(ToolSchema), v.maxLength(256, 'at most 256 tools'))),
    trace: v.optional(boundedJson(v.record(v.string(), v.unknown()))),
    truncation: v.optional(v.nullable(v.picklist(['auto', 'disabled']))),
    // OpenRouter's transforms, as on /chat/completions: the route turns `middle-out` into the context-compression plugin.
    transforms: v.optional(v.nullable(v.array(v.literal('middle-out', 'must be "middle-out", the only transform')))),
    // Chat Completions' name for `text.format`; taken here it would look applied while the Responses field rules.
    response_format: v.optional(v.nullable(v.custom<never>(() => false, 'is not a /responses field: send text.format'))),
    user: v.optional(v.pipe(v.string(), v.maxLength(USER_MAX, `must be at most ${USER_MAX} characters`))),
  }),
  v.check((body) => body.background !== true, BACKGROUND_REFUSED),
  v.check((body) => isImageConfigUsable(body), IMAGE_CONFIG_WITHOUT_IMAGES),
)

/** The body as the engine reads it: a plugin's own settings are its feature's to read. */
export type ResponsesRequestBody = v.InferOutput<ReturnType<typeof responsesRequestSchema<typeof PluginEntrySchema>>>
