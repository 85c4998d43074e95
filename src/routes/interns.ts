/**
 * Interns (spec: Intern; `POST /interns`, `PATCH /interns/{internId}`), plus the lifecycle routes
 * the spec names and the public counterpart serves (docs/decisions.md, Interns): list, inspect, provision, suspend,
 * delete and chat. Members of the interns programme only (others get 404); refused on regional
 * hostnames (403); the key's own workspace only, with no default-workspace fallback.
 */

import { AuthenticationError, InvalidRequestError, NotFoundError, PermissionDeniedError, RequestTimeoutError } from '../core/errors'
import { requestHostname } from '../core/request-host'
import { defineRoute, json, type RouteContext } from '../pipeline/route'
import { responseReply, toResponse } from '../core/reply'
import type { Caller } from '../pipeline/auth'
import type { Repositories } from '../repositories'
import type { InternRecord } from '../repositories/interns'
import { decodeCursor } from './cursor'
import { pageNewestFirst } from './interns.cursor'
import type { WorkspaceRecord } from '../repositories/workspaces'
import { parseInput } from '../core/validation'
import { appendTurn, rewriteChatStream } from '../interns/chat'
import { newSessionId, toInternChatChunks, toInternChatInput } from '../interns/chat-completions'
import type { InternApprovalMode } from '../interns/runtime'
import {
  createIntern,
  destroyIntern,
  startProvisioning,
  suspendIntern,
  toInternWire,
  toView,
  updateIntern,
  conflict,
  internEnvironment,
  type InternEnvironment,
} from '../interns/service'
import { ResponsesRequestSchema } from '../features/request-body'
import { observeSession } from '../engine/observe'
import { WORKSPACE_GONE, prepareRequest, type RunContext } from '../engine/run'
import { internChatObserver } from '../interns/chat-session'
import { replyTo } from '../writers/responses-reply'
import type { GatewayRuntime } from '../pipeline/runtime'
import type { InputItem } from '../providers/types'
import type { JsonValue } from '../storage/contract'
import { readIdempotencyKey } from '../pipeline/idempotency'
import { createGenerationRecorder, prepareRecorded } from '../ledger/generation-record'
import {
  ChatBodySchema,
  DeleteInternBodySchema,
  InternChatCompletionsBodySchema,
  CreateInternBodySchema,
  INTERN_BODY_LIMIT,
  InternParamsSchema,
  ListInternsQuerySchema,
  UpdateInternBodySchema,
} from './interns.schemas'

/** spec Errors: the sample 408 cites 10 seconds. */
const INTERN_TIMEOUT_MS = 10_000

const withTimeout = async <T>(work: Promise<T>): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RequestTimeoutError('The request timed out after 10 seconds', { reason: 'timeout' })), INTERN_TIMEOUT_MS)
  })
  try {
    return await Promise.race([work, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * spec Authentication 3: outside the programme every intern route is 404; regional hostnames are
 * refused, the hostname coming from the source the operator trusts (core/request-host.ts).
 */
const authorizeInterns = ({ caller, request, runtime }: { caller: Caller; request: Request; runtime: GatewayRuntime }) => {
  if (!caller.flags.interns) throw new NotFoundError('Not found', { reason: 'not_found' })
  const { regionalHostnames, isRegionalDeployment } = runtime.interns
  if (isRegionalDeployment || (regionalHostnames.size > 0 && regionalHostnames.has(requestHostname(request, runtime.trustedHostHeader)))) {
    throw new PermissionDeniedError('Interns are not available on regional hostnames; use the global endpoint', { reason: 'regional_host' })
  }
}

const environmentOf = internEnvironment

/**
 * The key's workspace: intern routes never fall back to the account's default (spec). A regular key
 * whose workspace was deleted is no longer valid (401, as on `/responses`); a management key stays
 * valid account-wide, it just has no workspace to show here (404).
 */
const keyWorkspace = async (repositories: Repositories, caller: Caller) => {
  const workspace = await repositories.workspaces.get(caller.key.workspaceId)
  if (workspace) return workspace
  if (caller.key.kind === 'regular') throw new AuthenticationError(WORKSPACE_GONE)
  throw new NotFoundError("The API key's workspace no longer exists", { reason: 'not_found' })
}

/** An intern visible to the key (in the key's workspace, which must still exist), with that workspace; or 404. */
const visibleIntern = async (repositories: Repositories, caller: Caller, internId: string) => {
  const workspace = await keyWorkspace(repositories, caller)
  const intern = await repositories.interns.get(internId)
  if (!intern || intern.workspaceId !== workspace.id || intern.accountId !== caller.account.id) {
    throw new NotFoundError('Intern not found', { reason: 'not_found' })
  }
  return { intern, workspace }
}

const common = { auth: 'any', errorFlavor: 'intern', bodyLimit: INTERN_BODY_LIMIT, authorize: authorizeInterns } as const

export const createInternRoute = defineRoute({
  ...common,
  method: 'POST',
  path: '/interns',
  audit: 'intern.create',
  body: CreateInternBodySchema,
  async handle(context) {
    const { body, caller, repositories, request } = context
    const idempotencyKey = readIdempotencyKey(request)
    const workspace = await keyWorkspace(repositories, caller)
    if (body.workspace_id !== undefined && body.workspace_id !== workspace.id) {
      throw new InvalidRequestError("body.workspace_id: must be the API key's workspace", { reason: 'invalid_body' })
    }
    const { intern, isFirst } = await withTimeout(
      createIntern(
        environmentOf(context),
        caller,
        workspace,
        {
          name: body.name,
          description: body.description,
          instructions: body.instructions,
          model: body.model,
          provision: body.provision,
          vaultId: body.vault_id,
        },
        idempotencyKey,
      ),
    )
    // A replayed or resumed create changes nothing new: only the first is recorded.
    if (isFirst) {
      await context.audit({
        target: { type: 'intern', id: intern.id },
        workspaceId: workspace.id,
        changes: { name: body.name, description: body.description, instructions: body.instructions, model: body.model, provision: body.provision, vault_id: body.vault_id },
      })
    }
    // docs/decisions.md, Interns: 201 on the first create, 200 when a create is replayed or resumed.
    return json(toInternWire(intern), isFirst ? 201 : 200)
  },
})

export const listInternsRoute = defineRoute({
  ...common,
  method: 'GET',
  path: '/interns',
  query: ListInternsQuerySchema,
  async handle({ query, caller, repositories }) {
    const workspace = await keyWorkspace(repositories, caller)
    if (query.workspace_id !== undefined && query.workspace_id !== workspace.id) {
      throw new InvalidRequestError("query.workspace_id: must be the API key's workspace", { reason: 'invalid_body' })
    }
    if (query.cursor !== undefined && query.starting_after !== undefined && query.cursor !== query.starting_after) {
      throw new InvalidRequestError('query.starting_after: differs from query.cursor; send one of them', { reason: 'invalid_body' })
    }
    const cursor = query.starting_after ?? query.cursor
    const after = cursor === undefined ? undefined : decodeCursor(cursor)
    if (cursor !== undefined && !after) {
      const field = query.starting_after === undefined ? 'cursor' : 'starting_after'
      throw new InvalidRequestError(`query.${field}: must be a cursor from next_cursor`, { reason: 'invalid_body' })
    }
    // A workspace holds a handful of interns: the page is cut in memory, newest first (interns.cursor.ts).
    const all = (await repositories.interns.list({ workspaceId: workspace.id }, 0, Number.MAX_SAFE_INTEGER)).interns
    const listed = query.status && query.status.length > 0 ? all.filter((intern) => query.status!.includes(intern.status)) : all
    const { page, hasMore, nextCursor } = pageNewestFirst(listed, query.limit, after)
    // The last page has no `next_cursor` at all: OpenRouter's SDK takes a string or nothing, never null.
    return json({ data: page.map(toInternWire), has_more: hasMore, ...(nextCursor === undefined ? {} : { next_cursor: nextCursor }) })
  },
})

export const getInternRoute = defineRoute({
  ...common,
  method: 'GET',
  path: '/interns/:internId',
  params: InternParamsSchema,
  async handle({ params, caller, repositories }) {
    return json(toInternWire((await visibleIntern(repositories, caller, params.internId)).intern))
  },
})

export const updateInternRoute = defineRoute({
  ...common,
  method: 'PATCH',
  path: '/interns/:internId',
  audit: 'intern.update',
  params: InternParamsSchema,
  body: UpdateInternBodySchema,
  async handle(context) {
    const { params, body, caller, repositories } = context
    const { intern } = await visibleIntern(repositories, caller, params.internId)
    const updated = await withTimeout(updateIntern(environmentOf(context), intern, body))
    await context.audit({ target: { type: 'intern', id: intern.id }, workspaceId: intern.workspaceId, changes: body })
    return json(toInternWire(updated))
  },
})

/** A lifecycle action on a visible intern, answered with a fixed acknowledgement (docs/decisions.md, Interns shapes). */
const lifecycleRoute = (
  method: 'POST' | 'DELETE',
  path: string,
  audit: 'intern.provision' | 'intern.suspend',
  act: (environment: InternEnvironment, intern: InternRecord, workspace: WorkspaceRecord) => Promise<unknown>,
  acknowledgement: Record<string, boolean>,
  status: number,
) =>
  defineRoute({
    ...common,
    method,
    path,
    audit,
    params: InternParamsSchema,
    async handle(context) {
      const { intern, workspace } = await visibleIntern(context.repositories, context.caller, context.params.internId)
      await act(environmentOf(context), intern, workspace)
      await context.audit({ target: { type: 'intern', id: intern.id }, workspaceId: workspace.id })
      return json(acknowledgement, status)
    },
  })

export const provisionInternRoute = lifecycleRoute('POST', '/interns/:internId/provision', 'intern.provision', startProvisioning, { provisioning: true }, 202)
export const suspendInternRoute = lifecycleRoute('POST', '/interns/:internId/suspend', 'intern.suspend', suspendIntern, { suspended: true }, 200)
/**
 * OpenRouter's SDK always sends `{acknowledge_workspace_loss}` here. modelgate's runtimes keep no workspace
 * archive, so no teardown waits on one and both values delete alike (docs/decisions.md, Interns).
 */
export const deleteInternRoute = defineRoute({
  ...common,
  method: 'DELETE',
  path: '/interns/:internId',
  audit: 'intern.delete',
  params: InternParamsSchema,
  body: DeleteInternBodySchema,
  async handle(context) {
    const { intern, workspace } = await visibleIntern(context.repositories, context.caller, context.params.internId)
    await destroyIntern(environmentOf(context), intern, workspace)
    await context.audit({ target: { type: 'intern', id: intern.id }, workspaceId: workspace.id, changes: context.body ?? {} })
    return json({ deleting: true }, 202)
  },
})

type ChatRouteContext = Omit<RouteContext<unknown, unknown, unknown, 'inference'>, 'body' | 'params' | 'query'>

/**
 * Runs one chat turn of a running intern and answers with its Responses events; the turn joins the
 * intern's conversation (of `sessionId`, when the caller speaks in sessions).
 */
const runInternTurn = async (
  context: ChatRouteContext,
  intern: InternRecord,
  workspace: WorkspaceRecord,
  turnInput: { history: InputItem[]; input: InputItem[]; session?: { id: string; approvalMode: InternApprovalMode } },
) => {
  const { caller, repositories, runtime, requestId, signal, access } = context
  const { history, input, session } = turnInput
  const service = runtime.inference
  const storeTurn = (output: JsonValue[]) => appendTurn(repositories, intern.id, input as unknown as JsonValue[], output, runtime.interns.history, session)
  // Every model turn the runtime runs through the gateway is recorded like any other request (docs/decisions.md, Usage ledger).
  const runRecorded = async (turn: Record<string, unknown>, turnSignal: AbortSignal) => {
    const generation = { api: 'intern_chat' as const, caller, requestId, sessionId: undefined, arrivedAt: context.now(), startedAt: performance.now() }
    const turnContext: RunContext = { caller, repositories, requestId, signal: turnSignal, isMetadataRequested: false }
    const body = parseInput(ResponsesRequestSchema, turn, 'body')
    const prepared = await prepareRecorded(runtime.ledger, service, generation, body, () => prepareRequest(service, turnContext, body))
    const recorder = createGenerationRecorder(runtime.ledger, service, generation, prepared)
    return recorder.run(runtime.runRequest(prepared))
  }
  // A runtime that answered with SSE text (its `respond`, or a user's runtime): the turn is read back from the text.
  const fromSseText = (response: Response) => {
    if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) return response
    const stream = rewriteChatStream(response.body, (final) => storeTurn(final.output))
    return new Response(stream, { status: response.status, headers: response.headers })
  }
  const view = toView(intern, workspace)
  access?.requested(view.model)
  const answer = runtime.interns.runtime.chat(view, history, input, {
    signal,
    ...(session ? { approvalMode: session.approvalMode } : {}),
    respond: async (turn, turnSignal) => toResponse(await replyTo(runRecorded(turn, turnSignal))),
    openSession: async (turn, turnSignal) => {
      const outcome = await runRecorded({ ...turn, stream: true }, turnSignal)
      if (!outcome.isStream) throw new TypeError('a streamed turn answered whole')
      return outcome.session
    },
  })
  return replyTo(
    answer.then((turn) => (turn instanceof Response ? { isStream: false as const, reply: fromSseText(turn) } : { isStream: true as const, session: turn })),
    (session) => {
      const turn = observeSession(session, internChatObserver((output) => storeTurn(output as JsonValue[])))
      return access ? observeSession(turn, access.observer()) : turn
    },
  )
}

const runningIntern = async (repositories: Repositories, caller: Caller, internId: string) => {
  const { intern, workspace } = await visibleIntern(repositories, caller, internId)
  if (intern.status !== 'running') throw conflict('not_running', `The intern is ${intern.status}; provision it before chatting`)
  return { intern, workspace }
}

/**
 * The mode of the run a request drives: a prompt starts a run in the mode it names (self-drive when none: the
 * mode is not remembered between prompts); a tool reply continues the run under the mode it started with.
 */
const approvalModeOf = (body: { approval_mode?: InternApprovalMode | undefined }, input: InputItem[], runMode: InternApprovalMode | null): InternApprovalMode => {
  if (input[0]?.type !== 'function_call_output') return body.approval_mode ?? 'self-drive'
  const mode = runMode ?? 'self-drive'
  if (body.approval_mode !== undefined && body.approval_mode !== mode) {
    throw new InvalidRequestError(`body.approval_mode: a tool reply continues the run under the mode it started with (${mode})`, { reason: 'invalid_body' })
  }
  return mode
}

const chatRoute = { ...common, auth: 'inference', method: 'POST', params: InternParamsSchema, isAccessLogged: true } as const

/** Our own chat: Responses input items in, Responses events out, one conversation per intern. */
export const chatInternRoute = defineRoute({
  ...chatRoute,
  // It runs the intern's model: the one rule for model calls applies (docs/decisions.md, Authentication).
  path: '/interns/:internId/chat',
  body: ChatBodySchema,
  async handle(context) {
    const { params, body, caller, repositories } = context
    const { intern, workspace } = await runningIntern(repositories, caller, params.internId)
    const input: InputItem[] = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : (body.input as InputItem[])
    const history = (await repositories.interns.conversations.get(intern.id)) as InputItem[]
    return runInternTurn(context, intern, workspace, { history, input })
  },
})

/**
 * OpenRouter's SDK path (`interns.chat`): chat messages in, chat completion chunks out, the
 * conversation named by `session_id` (docs/decisions.md, Interns).
 */
export const chatCompletionsInternRoute = defineRoute({
  ...chatRoute,
  path: '/interns/:internId/chat/completions',
  body: InternChatCompletionsBodySchema,
  async handle(context) {
    const { params, body, caller, repositories, now } = context
    const { intern, workspace } = await runningIntern(repositories, caller, params.internId)
    // OpenAI clients always send a model; the intern runs its own, so another one would be silently ignored.
    if (body.model !== undefined && body.model !== toView(intern, workspace).model) {
      throw new InvalidRequestError(`body.model: the intern runs ${toView(intern, workspace).model}; PATCH the intern to change its model`, { reason: 'invalid_body' })
    }
    const stored = await repositories.interns.conversations.session(intern.id)
    const sessionId = body.session_id ?? newSessionId()
    const isKnown = body.session_id !== undefined && stored.sessionId === body.session_id
    const history = (isKnown ? stored.items : []) as InputItem[]
    const input = toInternChatInput(body.messages, { requested: body.session_id, history: stored.items, isKnown })
    const approvalMode = approvalModeOf(body, input, isKnown ? stored.approvalMode : null)
    const reply = toResponse(await runInternTurn(context, intern, workspace, { history, input, session: { id: sessionId, approvalMode } }))
    // An error, or a runtime that answered whole rather than with events: passed on as it is.
    if (reply.status !== 200 || !reply.body || !reply.headers.get('content-type')?.startsWith('text/event-stream')) return responseReply(reply)
    const headers = new Headers(reply.headers)
    return responseReply(new Response(toInternChatChunks(reply.body, sessionId, now), { status: 200, headers }))
  },
})
