/**
 * `POST /messages` body: Anthropic's Messages request with OpenRouter's additions (docs/decisions.md,
 * POST /messages). Every declared field is translated into the engine's request
 * (src/formats/messages/translate.ts) or refused here with a 400 naming it; unknown top-level fields are
 * ignored, as on `/responses` and `/chat/completions`.
 */

import * as v from 'valibot'
import { boundedJson, integer, unknownFieldsRefused } from '../../core/validation'
import { isServerToolEntry, ServerToolEntrySchema, type ServerToolEntry } from '../shared/server-tool.schemas'
import { OPENROUTER_REQUEST_ENTRIES } from '../shared/openrouter-fields'
import {
  FunctionNameSchema,
  IMAGE_CONFIG_WITHOUT_IMAGES,
  isImageConfigUsable,
  ModelSlugSchema,
  PresetSlugSchema,
  RequestModelSchema,
  MODELS_MAX,
  USER_MAX,
  nullableNumber,
} from '../../engine/request.schemas'
import { MESSAGES_MAX, TOOLS_MAX } from '../chat-completions/schemas'

/** Anthropic's floor for a thinking budget. */
export const THINKING_BUDGET_MIN = 1024

/** A field we cannot honour: only absent or `null` (which asks for nothing) passes. */
const refused = (reason: string) => v.optional(v.nullable(v.custom<never>(() => false, `is not supported: ${reason}`)))

const emptyList = (reason: string) => v.optional(v.nullable(v.pipe(v.array(v.unknown()), v.maxLength(0, `is not supported: ${reason}`))))

const CacheControlSchema = v.object({ type: v.literal('ephemeral'), ttl: v.optional(v.picklist(['5m', '1h'])) })
const cacheControl = v.optional(v.nullable(CacheControlSchema))

const nonEmpty = v.pipe(v.string(), v.minLength(1, 'must not be empty'))

const TextBlockSchema = v.object({
  type: v.literal('text'),
  text: v.string(),
  cache_control: cacheControl,
  citations: emptyList('citations are not returned on this route'),
})

const ImageBlockSchema = v.object({
  type: v.literal('image'),
  source: v.variant(
    'type',
    [
      v.object({ type: v.literal('base64'), media_type: v.picklist(['image/jpeg', 'image/png', 'image/gif', 'image/webp']), data: nonEmpty }),
      v.object({ type: v.literal('url'), url: nonEmpty }),
    ],
    'must be a base64 or url image source',
  ),
  cache_control: cacheControl,
})

const DocumentBlockSchema = v.object({
  type: v.literal('document'),
  source: v.variant(
    'type',
    [
      v.object({ type: v.literal('base64'), media_type: v.literal('application/pdf', 'must be "application/pdf"'), data: nonEmpty }),
      v.object({ type: v.literal('url'), url: nonEmpty }),
      v.object({ type: v.literal('text'), media_type: v.literal('text/plain', 'must be "text/plain"'), data: v.string() }),
    ],
    'must be a base64 (PDF), url or text document source',
  ),
  title: v.optional(v.nullable(v.string())),
  context: refused('document context is not forwarded to providers'),
  citations: v.optional(v.nullable(v.object({ enabled: v.optional(v.literal(false, 'is not supported: citations are not returned on this route')) }))),
  cache_control: cacheControl,
})

const ToolResultBlockSchema = v.object({
  type: v.literal('tool_result'),
  tool_use_id: nonEmpty,
  content: v.optional(
    v.lazy((content: unknown) =>
      typeof content === 'string'
        ? v.string()
        : v.array(v.variant('type', [TextBlockSchema, ImageBlockSchema, DocumentBlockSchema], 'must be a text, image or document block'), 'must be a string or an array of blocks'),
    ),
  ),
  is_error: v.optional(v.nullable(v.boolean())),
  cache_control: cacheControl,
})

const ToolUseBlockSchema = v.object({
  type: v.literal('tool_use'),
  id: nonEmpty,
  name: nonEmpty,
  input: boundedJson(v.record(v.string(), v.unknown())),
  cache_control: cacheControl,
})

const ThinkingBlockSchema = v.object({ type: v.literal('thinking'), thinking: v.string(), signature: v.string() })

const RedactedThinkingBlockSchema = v.object({ type: v.literal('redacted_thinking'), data: nonEmpty })

// Chosen by the value's kind, so a block's own error is not swallowed by a string-or-array union.
const stringOrBlocks = <S extends v.GenericSchema>(block: S, message: string) =>
  v.lazy((content: unknown) => (typeof content === 'string' ? v.string() : v.array(block, message)))

const UserBlockSchema = v.variant(
  'type',
  [TextBlockSchema, ImageBlockSchema, DocumentBlockSchema, ToolResultBlockSchema],
  'must be a text, image, document or tool_result block',
)

const AssistantBlockSchema = v.variant(
  'type',
  [TextBlockSchema, ToolUseBlockSchema, ThinkingBlockSchema, RedactedThinkingBlockSchema],
  'must be a text, tool_use, thinking or redacted_thinking block',
)

const MessageSchema = v.variant(
  'role',
  [
    v.object({ role: v.literal('user'), content: stringOrBlocks(UserBlockSchema, 'must be a string or an array of content blocks') }),
    v.object({ role: v.literal('assistant'), content: stringOrBlocks(AssistantBlockSchema, 'must be a string or an array of content blocks') }),
  ],
  'must have a role among user, assistant',
)

const SystemSchema = v.lazy((system: unknown) =>
  typeof system === 'string' ? v.string() : v.array(v.variant('type', [TextBlockSchema], 'must be a text block'), 'must be a string or an array of text blocks'),
)

const CustomToolSchema = v.object({
  type: v.optional(v.nullable(v.literal('custom'))),
  name: FunctionNameSchema,
  description: v.optional(v.nullable(v.string())),
  input_schema: boundedJson(v.record(v.string(), v.unknown())),
  cache_control: cacheControl,
  strict: v.optional(v.nullable(v.boolean())),
})

// Anthropic's server tools (web search, code execution, bash…) run at Anthropic; this gateway runs none of them.
const ServerToolSchema = v.object({
  type: v.custom<never>(
    () => false,
    // The type is not quoted back: whatever was sent may be a secret in the wrong field.
    'must be a custom tool (name, input_schema) or one of the gateway\'s server tools ("service:…"): Anthropic\'s server tools are not supported',
  ),
})

// Chosen by `type`, so a custom tool's own error names its field and a server tool's names the type; custom tools and
// the gateway's own server tools (`service:*`, run by the engine as on /responses) pass.
const ToolSchema = v.lazy((tool: unknown) => {
  if (isServerToolEntry(tool)) return ServerToolEntrySchema as unknown as typeof CustomToolSchema
  const type = typeof tool === 'object' && tool !== null ? (tool as { type?: unknown }).type : undefined
  return type === undefined || type === null || type === 'custom' ? CustomToolSchema : (ServerToolSchema as unknown as typeof CustomToolSchema)
}) as unknown as v.GenericSchema<unknown, v.InferOutput<typeof CustomToolSchema> | ServerToolEntry>

const disableParallel = { disable_parallel_tool_use: v.optional(v.nullable(v.boolean())) }

const ToolChoiceSchema = v.variant(
  'type',
  [
    v.strictObject({ type: v.literal('auto'), ...disableParallel }),
    v.strictObject({ type: v.literal('any'), ...disableParallel }),
    v.strictObject({ type: v.literal('tool'), name: FunctionNameSchema, ...disableParallel }),
    v.strictObject({ type: v.literal('none') }),
  ],
  'must be {type: "auto"}, {type: "any"}, {type: "tool", name} or {type: "none"}',
)

const ThinkingDisplaySchema = v.optional(v.nullable(v.literal('summarized', 'is not supported: only "summarized" thinking is returned')))

const ThinkingSchema = v.variant(
  'type',
  [
    v.strictObject({
      type: v.literal('enabled'),
      budget_tokens: integer(THINKING_BUDGET_MIN),
      display: ThinkingDisplaySchema,
    }),
    v.strictObject({ type: v.literal('adaptive'), display: ThinkingDisplaySchema }),
    v.strictObject({ type: v.literal('disabled') }),
  ],
  'must be {type: "enabled", budget_tokens}, {type: "adaptive"} or {type: "disabled"}',
)

export const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const

const OutputConfigSchema = v.strictObject({
  effort: v.optional(v.nullable(v.picklist(EFFORTS))),
  format: v.optional(v.nullable(v.strictObject({ type: v.literal('json_schema'), schema: boundedJson(v.record(v.string(), v.unknown())) }))),
})

const MessagesEntries = {
    model: v.optional(RequestModelSchema),
    models: v.optional(v.pipe(v.array(ModelSlugSchema), v.maxLength(MODELS_MAX, `at most ${MODELS_MAX} models`))),
    preset: v.optional(PresetSlugSchema),
    max_tokens: integer(1),
    system: v.optional(v.nullable(SystemSchema)),
    messages: v.pipe(v.array(MessageSchema), v.minLength(1, 'must have at least 1 message'), v.maxLength(MESSAGES_MAX, `at most ${MESSAGES_MAX} messages`)),
    tools: v.optional(v.nullable(v.pipe(v.array(ToolSchema), v.maxLength(TOOLS_MAX, `at most ${TOOLS_MAX} tools`)))),
    tool_choice: v.optional(v.nullable(ToolChoiceSchema)),
    thinking: v.optional(v.nullable(ThinkingSchema)),
    output_config: v.optional(v.nullable(OutputConfigSchema)),
    temperature: nullableNumber(0, 1),
    top_p: nullableNumber(0, 1),
    top_k: v.optional(v.nullable(integer(0))),
    // Carried beside the engine's request (translate.ts toExtensions); routing picks endpoints that send them.
    stop_sequences: v.optional(v.nullable(v.array(nonEmpty))),
    stream: v.optional(v.nullable(v.boolean())),
    metadata: v.optional(
      v.nullable(v.strictObject({ user_id: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(USER_MAX, `must be at most ${USER_MAX} characters`)))) })),
    ),
    cache_control: cacheControl,
    container: refused('containers belong to server tools, which this gateway does not run'),
    mcp_servers: emptyList('MCP servers are not run by this gateway'),
    // OpenRouter's additions, as on /chat/completions; image output comes back as image blocks.
    ...OPENROUTER_REQUEST_ENTRIES,
    // Anthropic's tiers: `auto` (its priority capacity when there is some), `standard_only` (the default tier).
    service_tier: v.optional(v.nullable(v.picklist(['auto', 'standard_only']))),
    context_management: refused('context editing runs on Anthropic alone; use the context-compression plugin'),
}

export const MessagesRequestSchema = v.pipe(
  v.looseObject(MessagesEntries),
  // Every field has its effect or a 400 naming it, unknown ones too (docs/decisions.md, POST /messages).
  unknownFieldsRefused<v.InferOutput<v.LooseObjectSchema<typeof MessagesEntries, undefined>>>(MessagesEntries),
  v.check(
    (body) => body.thinking?.type !== 'enabled' || body.thinking.budget_tokens < body.max_tokens,
    'thinking.budget_tokens must be less than max_tokens',
  ),
  v.check((body) => isImageConfigUsable(body), IMAGE_CONFIG_WITHOUT_IMAGES),
)

export type MessagesRequest = v.InferOutput<typeof MessagesRequestSchema>
export type MessageParam = MessagesRequest['messages'][number]
export type UserBlock = v.InferOutput<typeof UserBlockSchema>
export type AssistantBlock = v.InferOutput<typeof AssistantBlockSchema>
export type TextBlock = v.InferOutput<typeof TextBlockSchema>
export type ImageBlock = v.InferOutput<typeof ImageBlockSchema>
export type DocumentBlock = v.InferOutput<typeof DocumentBlockSchema>

/**
 * Anthropic's SDKs post their beta Messages calls to `/v1/messages?beta=true` (Claude Code does). The flag names
 * the SDK's API surface, not a behaviour: like the `anthropic-beta` header it is accepted and changes nothing.
 * Any other parameter is refused by name.
 */
export const MessagesQuerySchema = v.strictObject({ beta: v.optional(v.string()) })
