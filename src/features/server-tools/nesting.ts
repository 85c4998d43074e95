/**
 * Model calls a server tool makes on the caller's behalf (`service:advisor`, `service:subagent`): routed like
 * the caller's own request (their BYOK keys, their provider preferences), run through the ordinary engine and
 * billed to the same response. How deep they may nest is bounded here (docs/decisions.md, "Server tools").
 */

import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { Attempt } from '../../engine/routing'
import type { ResponseResult } from '../../engine/session-events'

/**
 * The deepest a nested call may run: the caller's request is depth 0, a subagent or advisor it calls depth 1,
 * an advisor a subagent consults depth 2. A subagent may not call a subagent, and an advisor has no tools, so
 * no request fans out further.
 */
export const MAX_NESTING_DEPTH = 2

/** Where a request's server tools stand among nested calls, and how a nested call is routed. */
export interface Nesting {
  /** 0 for the caller's own request; 1 inside a subagent. */
  readonly depth: number
  /** The model a nested call runs on when its tool names none: the caller's requested model. */
  readonly defaultModel: string
  /** The model a nested image request runs on when its tool names none: the workspace's `default_image_model`. */
  readonly defaultImageModel: string
  /**
   * Provider tools (`file_search`…) the gateway runs itself through the operator's executor, because no endpoint
   * of the request's models can run them (docs/decisions.md, "Server tools").
   */
  readonly gatewayRunTools: ReadonlySet<string>
  /** The workspace's `disabled_server_tools`, which hold for nested calls' tools too. */
  readonly disabled: readonly string[] | null
  /**
   * Plans the attempts of a nested call of `model` with the caller's BYOK credentials and provider preferences
   * (and the body's `modalities`). Throws routing's own errors (404 when no endpoint can serve it).
   */
  route(model: string, body: ResponsesRequestBody): Attempt[]
}

/** A nested model call ready to run: its body (tools included) and the attempts planned for it. */
export interface NestedModelCall {
  body: ResponsesRequestBody
  attempts: Attempt[]
}

/**
 * Runs a nested call through the engine as a whole answer, with its own server-tool loop when its body has
 * server tools. Rejects with the engine's error when every attempt failed, or `ClientClosedError`.
 */
export type NestedRunner = (call: NestedModelCall, signal: AbortSignal) => Promise<ResponseResult>

/** Used where a request has no caller to route for: nested calls are refused by name. */
export const noNesting: Nesting = {
  depth: MAX_NESTING_DEPTH,
  defaultModel: '',
  defaultImageModel: '',
  gatewayRunTools: new Set(),
  disabled: null,
  route() {
    throw new Error('nested model calls are not available here')
  },
}

/** The nesting of the requests a tool at `nesting` makes. */
export const deeper = (nesting: Nesting): Nesting => ({ ...nesting, depth: nesting.depth + 1 })
