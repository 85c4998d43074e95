/**
 * The scripted provider's adapter: an ordinary provider adapter (src/providers/contract.ts) over the kit's own
 * wire format (./wire.ts), building the engine's events with the shared output builder, as every built-in
 * adapter does. So a scripted answer reaches routing, fallbacks, billing and the writers exactly as a real one.
 */

import type { ProviderAdapter, UpstreamErrorContext, UpstreamCall, UpstreamResult, UpstreamStreamEvent } from '../providers/contract'
import { createOutputBuilder, type OutputBuilder } from '../providers/shared/output-builder'
import { classifyUpstreamError } from '../providers/shared/errors'
import { STATUS_FOR_ERROR_TYPE, UpstreamFailure, type ErrorType } from '../core/upstream-failure'
import { readSse } from '../providers/shared/sse'
import type { ItemEvent } from '../providers/contract'
import { parseRetryAfter } from '../providers/shared/retry-after'
import { emptyUsage, type Usage } from '../providers/types'
import type { WireErrorBody, WireRequest, WireStep } from './wire'

/** The wire format's name, as routing and logs see it. */
export const SCRIPTED_API = 'modelgate-scripted'

const isErrorType = (value: unknown): value is ErrorType => typeof value === 'string' && Object.hasOwn(STATUS_FOR_ERROR_TYPE, value)

/** Reads a script's answer step by step, keeping what the end of the answer needs. */
const createReader = () => {
  const builder: OutputBuilder = createOutputBuilder()
  let usage: Usage = emptyUsage()
  let finish: { status: 'completed' | 'incomplete'; incompleteDetails: { reason: string } | null } = { status: 'completed', incompleteDetails: null }
  const read = (step: WireStep): ItemEvent[] => {
    switch (step.type) {
      case 'text':
        return builder.text(step.delta)
      case 'refusal':
        return builder.refusal(step.delta)
      case 'reasoning_summary':
        return builder.reasoningSummary(step.delta)
      case 'reasoning_text':
        return builder.reasoningText(step.delta)
      case 'reasoning_end':
        return builder.endReasoning()
      case 'function_call':
        return builder.functionCall(step.key, { name: step.name, ...(step.callId ? { callId: step.callId } : {}) })
      case 'function_call_arguments':
        return builder.functionCallArguments(step.key, step.delta)
      case 'usage':
        usage = step.usage
        return []
      case 'finish':
        finish = { status: step.status, incompleteDetails: step.status === 'incomplete' ? { reason: step.reason ?? 'max_output_tokens' } : null }
        return []
      case 'error':
        throw new UpstreamFailure(step.errorType, step.message, { upstreamStatus: 200 })
    }
  }
  return {
    builder,
    read,
    get usage() {
      return usage
    },
    get finish() {
      return finish
    },
  }
}

const readResult = (body: unknown): UpstreamResult => {
  if (!Array.isArray(body)) throw new UpstreamFailure('provider_unavailable', 'The scripted provider sent a malformed answer', { upstreamStatus: 200 })
  const reader = createReader()
  for (const step of body as WireStep[]) reader.read(step)
  reader.builder.finish(reader.finish.status)
  return { output: reader.builder.items, usage: reader.usage, status: reader.finish.status, incompleteDetails: reader.finish.incompleteDetails }
}

async function* readStream(body: AsyncIterable<Uint8Array>, call: UpstreamCall): AsyncIterable<UpstreamStreamEvent> {
  const reader = createReader()
  for await (const message of readSse(body, call.maxEventBytes)) yield* reader.read(JSON.parse(message.data) as WireStep)
  yield* reader.builder.finish(reader.finish.status)
  yield { type: 'upstream.usage', usage: reader.usage }
  yield { type: 'upstream.finish', ...reader.finish }
}

const toError = (status: number, bodyText: string, context?: UpstreamErrorContext): UpstreamFailure => {
  let error: Partial<WireErrorBody['error']> = {}
  try {
    error = (JSON.parse(bodyText) as WireErrorBody).error ?? {}
  } catch {
    // The transport always sends JSON; anything else is reported as the provider's own failure below.
  }
  const message = typeof error.message === 'string' ? error.message : `The scripted provider answered ${status}`
  const retryAfterSeconds = parseRetryAfter(context?.headers?.get('retry-after') ?? null, context?.nowMs ?? Date.now())
  return new UpstreamFailure(isErrorType(error.type) ? error.type : classifyUpstreamError(status, message), message, {
    upstreamStatus: status,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  })
}

/** The adapter of every scripted provider; their base URLs tell them apart. */
export const scriptedAdapter: ProviderAdapter = {
  contractVersion: 1,
  pdfInput: { fileData: true, fileUrl: true },
  api: SCRIPTED_API,
  buildRequest(call, target) {
    // The raw end-user fields never go upstream, from a scripted provider neither: it sees the hash, as real ones do.
    const { user: _user, safety_identifier: _safetyIdentifier, ...request } = call.request
    const wire: WireRequest = { model: call.upstreamModel, stream: call.stream, request, ...(call.endUserId ? { endUserId: call.endUserId } : {}) }
    return {
      url: `${target.baseURL}/responses`,
      method: 'POST',
      headers: { ...target.headers, 'content-type': 'application/json', authorization: `Bearer ${target.apiKey}` },
      body: JSON.stringify(wire),
    }
  },
  readResult,
  readStream,
  toError,
}
