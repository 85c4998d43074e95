import * as v from 'valibot'
import { MODEL_SLUG_MAX, MODEL_SLUG_PATTERN, UUID_PATTERN } from '../core/patterns'
import { integerQuery, passThroughObject } from '../core/validation'

// spec Intern table and Limits.
export const INTERN_NAME_MIN = 2
export const INTERN_NAME_MAX = 17
export const INTERN_NAME_PATTERN = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/
export const INTERN_DESCRIPTION_MAX = 2000
export const INTERN_INSTRUCTIONS_MAX = 100_000
export const INTERNS_PAGE_MAX = 500
export const INTERN_BODY_LIMIT = 1_048_576

const UuidSchema = v.pipe(v.string(), v.regex(UUID_PATTERN, 'must be a UUID'))

const NameSchema = v.pipe(
  v.string(),
  v.minLength(INTERN_NAME_MIN, `must be ${INTERN_NAME_MIN} to ${INTERN_NAME_MAX} characters`),
  v.maxLength(INTERN_NAME_MAX, `must be ${INTERN_NAME_MIN} to ${INTERN_NAME_MAX} characters`),
  v.regex(INTERN_NAME_PATTERN, 'must be lowercase letters and digits in hyphen-separated words, starting with a letter'),
)

const DescriptionSchema = v.nullable(
  v.pipe(v.string(), v.maxLength(INTERN_DESCRIPTION_MAX, `must be at most ${INTERN_DESCRIPTION_MAX} characters`)),
)

const InstructionsSchema = v.nullable(
  v.pipe(v.string(), v.maxLength(INTERN_INSTRUCTIONS_MAX, `must be at most ${INTERN_INSTRUCTIONS_MAX} characters`)),
)

// spec Intern model: 1 to 200 characters `<author>/<name>` with an optional `:variant`.
const ModelSchema = v.nullable(
  v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(MODEL_SLUG_MAX, `must be at most ${MODEL_SLUG_MAX} characters`),
    v.regex(MODEL_SLUG_PATTERN, 'must be a model slug <author>/<name>, optionally with :variant'),
  ),
)

export const CreateInternBodySchema = v.strictObject({
  name: NameSchema,
  description: v.optional(DescriptionSchema),
  instructions: v.optional(InstructionsSchema),
  model: v.optional(ModelSchema),
  provision: v.optional(v.boolean(), false),
  workspace_id: v.optional(UuidSchema),
  // docs/decisions.md, Interns: the vault-attach field is `vault_id` on input, reflected as `attached_vault_id`.
  vault_id: v.optional(v.nullable(UuidSchema)),
})

export const UpdateInternBodySchema = v.strictObject({
  name: v.optional(NameSchema),
  description: v.optional(DescriptionSchema),
  instructions: v.optional(InstructionsSchema),
  model: v.optional(ModelSchema),
})

export const InternParamsSchema = v.strictObject({ internId: UuidSchema })

export const INTERN_STATUSES = [
  'awaiting_messaging_install',
  'queued',
  'provisioning',
  'running',
  'failed',
  'stopped',
  'destroying',
  'destroy_failed',
] as const

export const ListInternsQuerySchema = v.strictObject({
  limit: v.optional(integerQuery(1, INTERNS_PAGE_MAX), '50'),
  // OpenRouter's SDK sends the previous page's `next_cursor` as `starting_after`; `cursor` is the same.
  starting_after: v.optional(v.pipe(v.string(), v.regex(/^[\w-]{1,400}$/, 'must be a cursor from next_cursor'))),
  cursor: v.optional(v.pipe(v.string(), v.regex(/^[\w-]{1,400}$/, 'must be a cursor from next_cursor'))),
  status: v.optional(
    v.pipe(
      v.string(),
      v.transform((value) => value.split(',').map((status) => status.trim())),
      v.check(
        (statuses) => statuses.every((status) => (INTERN_STATUSES as readonly string[]).includes(status)),
        `must be a comma-separated list of ${INTERN_STATUSES.join(', ')}`,
      ),
    ),
  ),
  workspace_id: v.optional(UuidSchema),
})

export const ChatBodySchema = v.strictObject({
  input: v.union(
    [v.pipe(v.string(), v.minLength(1, 'must not be empty')), v.pipe(v.array(passThroughObject({ type: v.optional(v.string()) })), v.minLength(1, 'must not be empty'))],
    'must be a string or an array of input items',
  ),
})

/** spec Limits: OpenRouter's intern API bounds nothing here; a session id is an opaque token of ours or the caller's. */
export const INTERN_SESSION_ID_MAX = 128

const ChatContentSchema = v.nullable(
  v.union(
    [v.string(), v.array(v.strictObject({ type: v.literal('text'), text: v.string() }))],
    'must be a string or an array of text parts',
  ),
)

/** Earlier messages are the client's copy of the history (only the last is read), so they are checked loosely. */
const ChatMessageSchema = v.variant(
  'role',
  [
    v.object({ role: v.literal('user'), content: ChatContentSchema }),
    v.object({ role: v.picklist(['system', 'developer']), content: ChatContentSchema }),
    v.object({ role: v.literal('assistant'), content: v.optional(ChatContentSchema), tool_calls: v.optional(v.array(passThroughObject({}))) }),
    v.object({ role: v.literal('tool'), content: ChatContentSchema, tool_call_id: v.pipe(v.string(), v.minLength(1, 'must not be empty')) }),
  ],
  'must have role user, assistant, system, developer or tool',
)

/** OpenRouter's `InternChatCompletionRequest` (intern chat on the SDK's path). */
export const InternChatCompletionsBodySchema = v.strictObject(
  {
    messages: v.pipe(v.array(ChatMessageSchema), v.minLength(1, 'must not be empty')),
    // Only streaming exists here: `false` or an omitted `stream` is refused, as OpenRouter's intern API does.
    stream: v.literal(true, 'must be true: intern chat only streams'),
    session_id: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(INTERN_SESSION_ID_MAX, `must be at most ${INTERN_SESSION_ID_MAX} characters`))),
    approval_mode: v.optional(v.picklist(['self-drive', 'manual'], 'must be self-drive or manual')),
    model: v.optional(v.pipe(v.string(), v.maxLength(MODEL_SLUG_MAX, `must be at most ${MODEL_SLUG_MAX} characters`))),
  },
)

/** OpenRouter's optional delete body; an empty body reads as `{}`. */
export const DeleteInternBodySchema = v.strictObject({ acknowledge_workspace_loss: v.optional(v.boolean('must be a boolean')) })
