/**
 * `POST /responses` (spec): one complete JSON result, or a server-sent event stream. Routing,
 * fallbacks, BYOK and billing happen in src/engine; src/formats encodes the answer; this route wires
 * the request to them. Stored responses (docs/decisions.md, Stored responses): the answer kept under the key's
 * workspace, continued with `previous_response_id`, read, listed and deleted by the routes below.
 */

import * as v from 'valibot'
import { InvalidRequestError, NotFoundError } from '../core/errors'
import { unknownFieldsRefused } from '../core/validation'
import { defineRoute, json } from '../pipeline/route'
import type { RouteExtensions } from '../engine/request'
import type { ResponsesRequestBody } from '../engine/request.schemas'
import { ResponsesRequestSchema } from '../features/request-body'
import type { StoredResponseContent } from '../repositories/stored-responses'
import type { JsonObject, JsonValue } from '../storage/contract'
import type { ResponseOwner, StoredResponses } from '../services/stored-responses'
import { resultObject } from '../formats/responses/object'
import { RESPONSES_FORMAT } from '../formats/responses/reply'
import { answerInference, INFERENCE_BODY_LIMIT, type AnswerKeeper } from './inference'
import { GetResponseQuerySchema, ListInputItemsQuerySchema, ResponseParamsSchema } from './responses.schemas'
import { pluginsWithTransforms } from '../formats/shared/transforms'

/**
 * spec `top_logprobs`: how many likely alternatives each output token carries. The spec's `include` has no
 * log-probabilities entry, so a positive `top_logprobs` is what asks for them: it becomes the `logprobs` setting
 * routing sends only where it is honoured, and the answer's `output_text` parts carry them. `0` and `null` ask for nothing.
 */
const logprobsExtension = (body: ResponsesRequestBody): RouteExtensions | undefined =>
  body.top_logprobs ? { values: { logprobs: { topLogprobs: body.top_logprobs } }, fieldNames: { logprobs: 'body.top_logprobs' } } : undefined

/** `transforms: ["middle-out"]` is the context-compression plugin, `[]` turns it off (src/formats/shared/transforms.ts). */
const withTransforms = (body: ResponsesRequestBody): ResponsesRequestBody => {
  if (body.transforms == null) return body
  const { transforms, ...rest } = body
  const plugins = pluginsWithTransforms(body.plugins, transforms)
  return plugins ? { ...rest, plugins } : rest
}

/**
 * The body as `ResponsesRequestSchema` reads it, with every field it does not declare refused by name: a field takes
 * effect or is a 400 (docs/decisions.md, POST /responses).
 */
const ResponsesRouteBodySchema = v.pipe(ResponsesRequestSchema, unknownFieldsRefused<v.InferOutput<typeof ResponsesRequestSchema>>(ResponsesRequestSchema.pipe[0].entries))

const NO_STORE = 'this gateway stores no responses (its storedResponses option is off)'
const REFUSALS = {
  workspace_off: "this workspace does not store responses (its is_response_storage_enabled is false)",
  no_encryption_key: 'this workspace keeps content sealed (its I/O logging is off) and the gateway has no encryption key to seal it',
} as const

const notFound = (id: string) => new NotFoundError(`Response with id '${id}' not found`)

/** The request's own input as items: a string is one user message. */
const inputItemsOf = (input: ResponsesRequestBody['input']): JsonValue[] =>
  typeof input === 'string' ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }] : (input as unknown as JsonValue[])

/** The conversation a stored response ends: what came before it, its input, then its output. */
const conversationOf = (stored: StoredResponseContent): JsonValue[] => [...stored.history, ...stored.input, ...((stored.response.output as JsonValue[] | undefined) ?? [])]

const ownerOf = (caller: { account: { id: string }; key: { workspaceId: string } }): ResponseOwner => ({ accountId: caller.account.id, workspaceId: caller.key.workspaceId })

export const createResponse = defineRoute({
  method: 'POST',
  path: '/responses',
  auth: 'inference',
  bodyLimit: INFERENCE_BODY_LIMIT,
  body: ResponsesRouteBodySchema,
  isAccessLogged: true,
  async handle(context) {
    const { runtime } = context
    const body = withTransforms(context.body)
    const stored = runtime.storedResponses
    // Without a response store the request runs as it always did: no store read, no write.
    if (!stored) {
      if (body.store === true) throw new InvalidRequestError(`body.store: ${NO_STORE}`)
      if (body.previous_response_id != null) throw new InvalidRequestError(`body.previous_response_id: ${NO_STORE}; send the whole conversation in input`)
      return answerInference(context, body, RESPONSES_FORMAT, 'responses', logprobsExtension(body))
    }
    const owner = ownerOf(context.caller)
    const workspace = await context.repositories.workspaces.get(owner.workspaceId)
    if (!workspace) throw new NotFoundError('Workspace not found')
    const refusal = stored.refusal(workspace)
    if (body.store === true && refusal) throw new InvalidRequestError(`body.store: ${REFUSALS[refusal]}`)
    const isStored = body.store ?? refusal === null
    const history = body.previous_response_id == null ? [] : await continued(stored, body.previous_response_id, owner)
    const input = inputItemsOf(body.input)
    const request: ResponsesRequestBody = {
      ...body,
      store: isStored,
      ...(history.length > 0 ? { input: [...history, ...input] as ResponsesRequestBody['input'] } : {}),
    }
    const keep: AnswerKeeper | undefined = isStored
      ? (answered, result) => stored.save(result.id, owner, workspace, { response: resultObject(answered, result) as unknown as JsonObject, input, history })
      : undefined
    return answerInference(context, request, RESPONSES_FORMAT, 'responses', logprobsExtension(request), keep)
  },
})

/** The conversation `previousId` ends, as the next request's context; 404 unless the caller's workspace stored it. */
const continued = async (stored: StoredResponses, previousId: string, owner: ResponseOwner): Promise<JsonValue[]> => {
  const previous = await stored.load(previousId, owner)
  if (!previous) throw new NotFoundError(`Previous response with id '${previousId}' not found`)
  return conversationOf(previous)
}

const requireStore = (stored: StoredResponses | null, id: string): StoredResponses => {
  // A gateway that stores nothing has no response of any id.
  if (!stored) throw notFound(id)
  return stored
}

export const getResponse = defineRoute({
  method: 'GET',
  path: '/responses/:id',
  auth: 'inference',
  params: ResponseParamsSchema,
  query: GetResponseQuerySchema,
  async handle({ params, caller, runtime }) {
    const content = await requireStore(runtime.storedResponses, params.id).load(params.id, ownerOf(caller))
    if (!content) throw notFound(params.id)
    return json(content.response)
  },
})

export const deleteResponse = defineRoute({
  method: 'DELETE',
  path: '/responses/:id',
  auth: 'inference',
  params: ResponseParamsSchema,
  async handle({ params, caller, runtime }) {
    if (!(await requireStore(runtime.storedResponses, params.id).delete(params.id, ownerOf(caller)))) throw notFound(params.id)
    return json({ id: params.id, object: 'response', deleted: true })
  },
})

/** An input item as listed: with an id, the item's own or one made from its response and position. */
const listedItem = (responseId: string, item: JsonValue, index: number): JsonObject => {
  const object = item as JsonObject
  return typeof object.id === 'string' ? object : { id: `item_${responseId.slice('resp_'.length)}_${index}`, ...object }
}

export const listResponseInputItems = defineRoute({
  method: 'GET',
  path: '/responses/:id/input_items',
  auth: 'inference',
  params: ResponseParamsSchema,
  query: ListInputItemsQuerySchema,
  async handle({ params, query, caller, runtime }) {
    const content = await requireStore(runtime.storedResponses, params.id).load(params.id, ownerOf(caller))
    if (!content) throw notFound(params.id)
    const items = content.input.map((item, index) => listedItem(params.id, item, index))
    if (query.order === 'desc') items.reverse()
    const positionOf = (cursor: string | undefined, name: string) => {
      if (cursor === undefined) return undefined
      const position = items.findIndex((item) => item.id === cursor)
      if (position < 0) throw new InvalidRequestError(`query.${name}: no input item of this response has this id`)
      return position
    }
    const after = positionOf(query.after, 'after')
    const before = positionOf(query.before, 'before')
    const from = after === undefined ? 0 : after + 1
    const to = before === undefined ? items.length : before
    const page = items.slice(from, Math.max(from, to)).slice(0, Number(query.limit))
    return json({
      object: 'list',
      data: page,
      first_id: (page[0]?.id as string | undefined) ?? null,
      last_id: (page.at(-1)?.id as string | undefined) ?? null,
      has_more: from + page.length < Math.max(from, to),
    })
  },
})
