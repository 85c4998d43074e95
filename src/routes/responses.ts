/**
 * `POST /responses` (spec): one complete JSON result, or a server-sent event stream. Routing,
 * fallbacks, BYOK and billing happen in src/engine; src/formats encodes the answer; this route wires
 * the request to them. Stored responses (docs/decisions.md, Stored responses): the answer kept under the key's
 * workspace, continued with `previous_response_id`, read, listed and deleted by the routes below.
 */

import * as v from 'valibot'
import { InvalidRequestError, NotFoundError } from '../core/errors'
import { unknownFieldsRefused } from '../core/validation'
import type { Reply } from '../core/reply'
import type { Caller } from '../pipeline/auth'
import type { GatewayRuntime } from '../pipeline/runtime'
import { defineRoute, json, type RouteContext } from '../pipeline/route'
import { BACKGROUND_REFUSED, type ResponsesRequestBody } from '../engine/request.schemas'
import { ResponsesRequestSchema } from '../features/request-body'
import type { StoredResponseContent } from '../repositories/stored-responses'
import type { JsonObject, JsonValue } from '../storage/contract'
import type { ResponseOwner, StoredResponses } from '../services/stored-responses'
import { inProgressObject, resultObject } from '../formats/responses/object'
import { newResponseId } from '../engine/response-identity'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { assertPlannable, startBackgroundRun, withStatus } from './background-run'
import { backgroundStreamReply } from './background-stream'
import { TERMINAL, type BackgroundRuns } from '../services/background-runs'
import type { BackgroundRunRecord } from '../repositories/background-runs'
import { RESPONSES_FORMAT } from '../formats/responses/reply'
import { answerInference, INFERENCE_BODY_LIMIT, type AnswerKeeper } from './inference'
import { GetResponseQuerySchema, ListInputItemsQuerySchema, ResponseParamsSchema } from './responses.schemas'
import { logprobsExtension, withTransforms } from './responses-body'

/**
 * The body as `ResponsesRequestSchema` reads it, with every field it does not declare refused by name: a field takes
 * effect or is a 400 (docs/decisions.md, POST /responses).
 */
const [responsesObject, ...responsesChecks] = ResponsesRequestSchema.pipe
// `background: true` is this route's (docs/decisions.md, Background runs): the engine's refusal of it is dropped here.
const routeChecks = responsesChecks.filter((check) => check.message !== BACKGROUND_REFUSED) as unknown as typeof responsesChecks
const ResponsesRouteBodySchema = v.pipe(responsesObject, ...routeChecks, unknownFieldsRefused<v.InferOutput<typeof ResponsesRequestSchema>>(responsesObject.entries))

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
      if (body.background === true) throw new InvalidRequestError(`body.background: ${NO_STORE}, and a background response is a stored one`)
      if (body.store === true) throw new InvalidRequestError(`body.store: ${NO_STORE}`)
      if (body.previous_response_id != null) throw new InvalidRequestError(`body.previous_response_id: ${NO_STORE}; send the whole conversation in input`)
      return answerInference(context, body, RESPONSES_FORMAT, 'responses', logprobsExtension(body))
    }
    const owner = ownerOf(context.caller)
    const workspace = await context.repositories.workspaces.get(owner.workspaceId)
    if (!workspace) throw new NotFoundError('Workspace not found')
    const refusal = stored.refusal(workspace)
    if (body.store === true && refusal) throw new InvalidRequestError(`body.store: ${REFUSALS[refusal]}`)
    if (body.background === true) {
      if (refusal) throw new InvalidRequestError(`body.background: ${REFUSALS[refusal]}, and a background response is a stored one`)
      if (body.store === false) throw new InvalidRequestError('body.background: a background response is a stored one; leave store out or send true')
    }
    const isStored = body.store ?? refusal === null
    const history = body.previous_response_id == null ? [] : await continued(stored, body.previous_response_id, owner)
    const input = inputItemsOf(body.input)
    const request: ResponsesRequestBody = {
      ...body,
      store: isStored,
      ...(history.length > 0 ? { input: [...history, ...input] as ResponsesRequestBody['input'] } : {}),
    }
    if (body.background === true) return startBackground(context, request, input, history, workspace)
    const keep: AnswerKeeper | undefined = isStored
      ? (answered, result) => stored.save(result.id, owner, workspace, { response: resultObject(answered, result) as unknown as JsonObject, input, history })
      : undefined
    return answerInference(context, request, RESPONSES_FORMAT, 'responses', logprobsExtension(request), keep)
  },
})

type CreateContext = Pick<RouteContext<unknown, unknown, unknown>, 'request' | 'requestId' | 'caller' | 'repositories' | 'runtime' | 'logger' | 'clientSignal' | 'now'>

/**
 * Queues a background run (docs/decisions.md, Background runs) and starts it detached: the answer is the queued
 * Response object at once, or with `stream` the run's events, which the run does not wait for.
 */
const startBackground = async (context: CreateContext, request: ResponsesRequestBody, input: JsonValue[], history: JsonValue[], workspace: WorkspaceRecord): Promise<Reply> => {
  const { runtime, caller } = context
  const background = runtime.backgroundRuns!
  await assertPlannable(context, request)
  const id = newResponseId()
  const started = { id, createdAt: Math.floor(context.now().getTime() / 1000), model: request.model ?? workspace.defaultTextModel }
  const queued = withStatus(inProgressObject(request, started) as unknown as JsonObject, 'queued')
  const content = { request: request as unknown as JsonObject, input, history, response: queued }
  const record = await background.queue(id, { ...ownerOf(caller), keyHash: caller.key.hash }, workspace, content)
  startBackgroundRun({ runtime, background, repositories: context.repositories, logger: context.logger, now: context.now }, record, content, caller, context.request)
  return request.stream ? backgroundStreamReply(background, id, -1) : json(queued)
}

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

/** The Response object of a background run as it stands: the queued object in its current status, or the final one. */
const backgroundObject = async (background: BackgroundRuns, record: BackgroundRunRecord): Promise<JsonObject> => {
  const { response } = await background.content(record)
  return TERMINAL.has(record.status) ? response : withStatus(response, record.status)
}

/** What the routes of one response read first: the response store, whose it is, and its background run if it had one. */
const lookUp = async (runtime: GatewayRuntime, id: string, caller: Caller) => {
  const stored = requireStore(runtime.storedResponses, id)
  const owner = ownerOf(caller)
  const background = runtime.backgroundRuns
  const run = background ? await background.find(id, owner) : null
  return { stored, owner, background, run }
}

export const getResponse = defineRoute({
  method: 'GET',
  path: '/responses/:id',
  auth: 'inference',
  params: ResponseParamsSchema,
  query: GetResponseQuerySchema,
  async handle({ params, query, caller, runtime }) {
    const { stored, owner, background, run } = await lookUp(runtime, params.id, caller)
    if (run && background) {
      if (query.stream === 'true') return backgroundStreamReply(background, params.id, query.starting_after ?? -1)
      return json(await backgroundObject(background, run))
    }
    const content = await stored.load(params.id, owner)
    if (!content) throw notFound(params.id)
    // OpenAI's answer too: only a background response's events are kept to stream again.
    if (query.stream === 'true') throw new InvalidRequestError('query.stream: this response was not created with background: true, so it has no events to stream')
    return json(content.response)
  },
})

/**
 * `POST /responses/{id}/cancel` (docs/decisions.md, Background runs): a queued or running background response of the
 * caller's workspace stops, and is billed for what its upstream produced. Cancelling a cancelled one answers it again;
 * a finished one, or one not run in the background, is a 400.
 */
export const cancelResponse = defineRoute({
  method: 'POST',
  path: '/responses/:id/cancel',
  auth: 'inference',
  params: ResponseParamsSchema,
  async handle({ params, caller, runtime }) {
    const { stored, owner, background, run } = await lookUp(runtime, params.id, caller)
    if (!run || !background) {
      if (await stored.load(params.id, owner)) throw new InvalidRequestError('Only responses created with background: true can be cancelled')
      throw notFound(params.id)
    }
    if (run.status === 'cancelled') return json(await backgroundObject(background, run))
    if (TERMINAL.has(run.status)) throw new InvalidRequestError(`Cannot cancel a response that is already ${run.status}`)
    const cancelled = await background.cancel(params.id, (content) => withStatus(content.response, 'cancelled'))
    // Running here: stop the upstream call now; elsewhere its process reads the flag at its next heartbeat.
    background.local.get(params.id)?.controller.abort()
    const latest = cancelled ?? (await background.get(params.id))
    if (!latest) throw notFound(params.id)
    if (latest.status !== 'cancelled') throw new InvalidRequestError(`Cannot cancel a response that is already ${latest.status}`)
    return json(await backgroundObject(background, latest))
  },
})

export const deleteResponse = defineRoute({
  method: 'DELETE',
  path: '/responses/:id',
  auth: 'inference',
  params: ResponseParamsSchema,
  async handle({ params, caller, runtime }) {
    const { stored, owner, background, run } = await lookUp(runtime, params.id, caller)
    if (run && background) {
      // A run still going stops first: nothing is left to write a record that is gone.
      background.local.get(params.id)?.controller.abort()
      await background.cancel(params.id, (content) => withStatus(content.response, 'cancelled'))
      await background.delete(params.id)
    }
    if (!(await stored.delete(params.id, owner)) && !run) throw notFound(params.id)
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
