/**
 * Presets (OpenRouter's `/presets`): saved from a Responses, Chat Completions or Messages request body,
 * read back with their designated version, listed, and their versions listed; per workspace of the
 * calling key. Requests use them with `preset` or `@preset/<slug>` (presets.config.ts; docs/decisions.md, Presets).
 */

import * as v from 'valibot'
import { InvalidRequestError, NotFoundError } from '../core/errors'
import { sparseLooseObject } from '../core/validation'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import { ResponsesRequestSchema } from '../features/request-body'
import type { RouteExtensions } from '../engine/request'
import { defineRoute, json } from '../pipeline/route'
import type { Caller } from '../pipeline/auth'
import type { Repositories } from '../repositories'
import type { PresetRecord, PresetVersionRecord } from '../repositories/presets'
import { ChatCompletionsRequestSchema } from './chat-completions.schemas'
import { toEngineRequest as chatToEngine, toExtensions as chatExtensions } from './chat-completions.translate'
import { INFERENCE_BODY_LIMIT } from './inference'
import { MessagesRequestSchema } from './messages.schemas'
import { toEngineRequest as messagesToEngine, toExtensions as messagesExtensions } from './messages.translate'
import { toPresetContent } from './presets.config'
import { ListPresetsQuerySchema, PresetParamsSchema, PresetVersionParamsSchema } from './presets.schemas'

export const toPresetVersionWire = (version: PresetVersionRecord) => ({
  id: version.id,
  preset_id: version.presetId,
  version: version.version,
  config: version.config,
  system_prompt: version.systemPrompt,
  creator_id: version.creatorId,
  created_at: version.createdAt,
  updated_at: version.updatedAt,
})

export const toPresetWire = (preset: PresetRecord) => ({
  id: preset.id,
  slug: preset.slug,
  name: preset.name,
  description: preset.description,
  status: preset.status,
  status_updated_at: preset.statusUpdatedAt,
  designated_version_id: preset.designatedVersionId,
  workspace_id: preset.workspaceId,
  creator_user_id: preset.creatorUserId,
  created_at: preset.createdAt,
  updated_at: preset.updatedAt,
})

const withDesignatedVersion = (preset: PresetRecord, version: PresetVersionRecord | null) => ({
  ...toPresetWire(preset),
  designated_version: version ? toPresetVersionWire(version) : null,
})

const requirePreset = async (repositories: Repositories, caller: Caller, slug: string) => {
  const preset = await repositories.presets.findBySlug(caller.key.workspaceId, slug)
  if (!preset) throw new NotFoundError(`Preset "${slug}" not found`)
  return preset
}

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((part) => (part && typeof part === 'object' && 'text' in part ? String(part.text) : '')).join('') : ''

/**
 * The top-level fields a wire's request schema declares (its loose object, first in the pipe). The inference routes
 * ignore other top-level fields (docs/decisions.md, `POST /chat/completions`); a save must not, or it would answer
 * as if it kept them.
 */
/**
 * A Responses body as a preset save takes it: a preset holds settings, not a conversation, so `input` (which a
 * request needs) may be left out; every other field and rule is the request's.
 */
const [responsesObject, ...responsesChecks] = ResponsesRequestSchema.pipe
// The request's checks read no `input` and change nothing, so they hold for this body too; typed as no-ops.
const PresetResponsesSchema = v.pipe(
  sparseLooseObject({ ...responsesObject.entries, input: v.optional(responsesObject.entries.input) }),
  ...(responsesChecks as unknown as []),
)

/** The settings a save reads: a request body, its conversation aside. */
type PresetBody = Omit<ResponsesRequestBody, 'input'>

const declaredFields = (schema: v.GenericSchema): ReadonlySet<string> => {
  const object = 'pipe' in schema ? (schema.pipe as readonly v.GenericSchema[])[0] : schema
  return new Set(Object.keys((object as unknown as { entries: v.ObjectEntries }).entries))
}

type SaveInput = { body: PresetBody; systemPrompt: string | null; extensions?: RouteExtensions | undefined; fieldNames?: Record<string, string> }

const saveRoute = <S extends typeof PresetResponsesSchema | typeof ChatCompletionsRequestSchema | typeof MessagesRequestSchema>(
  path: string,
  schema: S,
  toSave: (body: v.InferOutput<S>) => SaveInput,
) => {
  const declared = declaredFields(schema)
  return defineRoute({
    method: 'POST',
    path,
    auth: 'any',
    audit: 'preset.save',
    bodyLimit: INFERENCE_BODY_LIMIT,
    params: PresetParamsSchema,
    body: schema,
    async handle({ params, body, caller, repositories, runtime, audit }) {
      const unknown = Object.keys(body as object).find((field) => !declared.has(field))
      if (unknown !== undefined) throw new InvalidRequestError(`body.${unknown}: unknown field`)
      const input = toSave(body as v.InferOutput<S>)
      const content = toPresetContent(input.body, input.systemPrompt, {
        models: runtime.inference.models,
        extensions: input.extensions,
        ...(input.fieldNames ? { fieldNames: input.fieldNames } : {}),
      })
      const owner = { accountId: caller.account.id, workspaceId: caller.key.workspaceId, creatorUserId: caller.key.creatorUserId }
      const saved = await repositories.presets.saveVersion(owner, params.slug, { ...content, creatorId: caller.key.creatorUserId })
      await audit({
        target: { type: 'preset', id: saved.preset.id },
        workspaceId: owner.workspaceId,
        changes: { slug: params.slug, version: saved.version.version, config: content.config, system_prompt: content.systemPrompt },
      })
      return json({ data: withDesignatedVersion(saved.preset, saved.version) })
    },
  })
}

/** From a Responses body: `instructions` is the system prompt. */
export const createPresetFromResponses = saveRoute('/presets/:slug/responses', PresetResponsesSchema, (body) => ({
  body,
  systemPrompt: typeof body.instructions === 'string' ? body.instructions : null,
}))

/** From a Chat Completions body: its system and developer messages are the system prompt; the rest is the conversation. */
export const createPresetFromChatCompletions = saveRoute('/presets/:slug/chat/completions', ChatCompletionsRequestSchema, (body) => ({
  body: chatToEngine(body),
  systemPrompt:
    body.messages
      .filter((message) => message.role === 'system' || message.role === 'developer')
      .map((message) => textOf(message.content))
      .join('\n\n') || null,
  extensions: chatExtensions(body),
  fieldNames: { max_output_tokens: 'body.max_tokens', text: 'body.response_format' },
}))

/** From a Messages body: `system` is the system prompt. */
export const createPresetFromMessages = saveRoute('/presets/:slug/messages', MessagesRequestSchema, (body) => ({
  body: { ...messagesToEngine(body), instructions: undefined },
  systemPrompt: body.system == null ? null : textOf(body.system) || null,
  extensions: messagesExtensions(body),
  fieldNames: { max_output_tokens: 'body.max_tokens', text: 'body.output_config', user: 'body.metadata' },
}))

export const getPreset = defineRoute({
  method: 'GET',
  path: '/presets/:slug',
  auth: 'any',
  params: PresetParamsSchema,
  async handle({ params, caller, repositories }) {
    const preset = await requirePreset(repositories, caller, params.slug)
    return json({ data: withDesignatedVersion(preset, await repositories.presets.designatedVersion(preset)) })
  },
})

export const listPresets = defineRoute({
  method: 'GET',
  path: '/presets',
  auth: 'any',
  query: ListPresetsQuerySchema,
  async handle({ query, caller, repositories }) {
    const page = await repositories.presets.list(caller.key.workspaceId, query.offset, query.limit)
    return json({ data: page.presets.map(toPresetWire), total_count: page.totalCount })
  },
})

export const listPresetVersions = defineRoute({
  method: 'GET',
  path: '/presets/:slug/versions',
  auth: 'any',
  params: PresetParamsSchema,
  query: ListPresetsQuerySchema,
  async handle({ params, query, caller, repositories }) {
    const preset = await requirePreset(repositories, caller, params.slug)
    const page = await repositories.presets.versions(preset.id, query.offset, query.limit)
    return json({ data: page.versions.map(toPresetVersionWire), total_count: page.totalCount })
  },
})

export const getPresetVersion = defineRoute({
  method: 'GET',
  path: '/presets/:slug/versions/:version',
  auth: 'any',
  params: PresetVersionParamsSchema,
  async handle({ params, caller, repositories }) {
    const preset = await requirePreset(repositories, caller, params.slug)
    const version = await repositories.presets.version(preset.id, params.version)
    if (!version) throw new NotFoundError(`Preset "${params.slug}" has no version ${params.version}`)
    return json({ data: toPresetVersionWire(version) })
  },
})
