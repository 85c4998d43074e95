/**
 * The contract of a plugin (docs/decisions.md, "Plugins"): a step the gateway runs once per request around the
 * model's answer, unlike a server tool, which the model calls. Each plugin is one module of this folder; the
 * registry (registry.ts) maps the spec's ids to them, and an id the registry does not run is refused by name.
 */

import type { UpstreamCall } from '../../providers/contract'
import type { PipelineStage } from '../../engine/pipeline-stage'
import type { ResponsesRequestBody } from '../../engine/request.schemas'
import type { Attempt } from '../../engine/routing'
import type { InferenceService } from '../../engine/service'
import type { SessionEvent, ResponseResult, StoppedUsage } from '../../engine/session-events'
import type { SpendTargets } from '../../engine/spend-targets'

/**
 * What plugins see of the request they run for (an `PluginRequest` is one): they may replace its body and
 * drop attempts before the first is sent, and they record their stages.
 */
export interface PluginRequest {
  body: ResponsesRequestBody
  attempts: Attempt[]
  readonly requestId: string
  /** The first model asked for (`model_slug` in moderation's 403). */
  readonly requestedModel: string
  readonly pipeline: PipelineStage[]
  /** Whose request it is (a tool a plugin runs is told the account and workspace). */
  readonly spend: Pick<SpendTargets, 'account' | 'workspace'>
}

/** What a plugin run needs beyond the request. */
export interface PluginContext {
  service: InferenceService
  /** The request's body as the caller sent it. */
  body: ResponsesRequestBody
  /** Where the plugin's settings are in the body, for errors (`body.plugins.2`). */
  where: string
}

/**
 * A plugin as one request configured it: built per request (it may keep counts), every hook optional. Hooks
 * run in the order the caller listed the plugins.
 */
export interface RequestPlugin {
  readonly id: string
  /** USD the plugin may spend before the attempts (the web plugin's search), reserved before it runs. */
  readonly price?: number
  /** USD it has spent: charged when the request fails before an answer's usage carried it. */
  spent?(): number
  /**
   * Before routing's first attempt and before spend is reserved: may replace `request.body` (text in place of a
   * PDF, search results added), drop attempts that cannot serve it, or throw the client's error (moderation).
   */
  beforeAttempts?(request: PluginRequest, signal: AbortSignal): Promise<void>
  /** The call one attempt sends: per endpoint, so a fallback with a larger context gets the whole prompt. */
  forAttempt?(call: UpstreamCall, attempt: Attempt, request: PluginRequest): UpstreamCall
  /** A whole answer's result, before it is billed and returned. */
  afterWhole?(result: ResponseResult, request: PluginRequest): ResponseResult
  /**
   * A streamed answer's events on their way to the writer: may change an event in place, and returns the events
   * to write before it (an annotation's `added` event before its text's `done`), if any.
   */
  onStreamEvent?(event: SessionEvent, request: PluginRequest): readonly SessionEvent[] | void
  /** What a stream the client stopped used, with what the plugin itself spent added (the web plugin's search). */
  onStopped?(used: StoppedUsage): StoppedUsage
}

/** A plugin id this gateway runs: its settings' schema lives in `<id>.schema.ts`, so request.schemas.ts can import it. */
export interface PluginDefinition<Settings> {
  readonly id: string
  /**
   * The plugin for one request, its settings already validated; `undefined` when it has nothing to do (disabled).
   * Throws `InvalidRequestError` naming the field when the gateway cannot honour a setting.
   */
  create(settings: Settings, context: PluginContext): RequestPlugin | undefined
}

/** Records a plugin stage in the request's metadata pipeline. */
export const recordStage = (request: PluginRequest, id: string, summary: string, data?: Record<string, unknown>): void => {
  request.pipeline.push({ type: 'plugin', name: id, summary, ...(data ? { data } : {}) })
}
