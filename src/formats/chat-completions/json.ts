/** A whole answer as a `chat.completion` object (OpenAI's Chat Completions, with OpenRouter's usage, reasoning and images). */

import type { ResponseResult } from '../../engine/session-events'
import { completedImages, type OutputFunctionCall, type OutputMessage, type OutputReasoning } from '../../providers/types'
import {
  chatCompletionId,
  finishReasonOf,
  MESSAGE_SEPARATOR,
  providerNameOf,
  reasoningDetailsOf,
  toChatAnnotation,
  toChatError,
  toChatImage,
  toChatLogprobs,
  toChatUsage,
  type ChatWriterOptions,
  type ReasoningDetail,
} from './shared'
import { asGeneratedImage } from '../shared/server-tool-images'
import { echoedServiceTier } from '../shared/service-tier'

const reasoningTextOf = (item: OutputReasoning) => {
  const parts = item.content?.length ? item.content : item.summary
  return parts.map((part) => part.text).join('')
}

const toMessage = (result: ResponseResult, options: ChatWriterOptions) => {
  let content: string | null = null
  let refusal: string | null = null
  let reasoning = ''
  const reasoningDetails: ReasoningDetail[] = []
  const toolCalls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = []
  const annotations: Array<NonNullable<ReturnType<typeof toChatAnnotation>>> = []
  for (const item of result.output) {
    if (item.type === 'message') {
      // A later message item is a later turn of a server-tool loop: its text starts apart.
      let separator: string = content ? MESSAGE_SEPARATOR : ''
      for (const part of (item as OutputMessage).content) {
        if (part.type !== 'output_text') {
          refusal = (refusal ?? '') + part.refusal
          continue
        }
        const offset = (content ?? '').length + separator.length
        content = (content ?? '') + separator + part.text
        separator = ''
        for (const annotation of part.annotations) {
          const cited = toChatAnnotation(annotation, offset)
          if (cited) annotations.push(cited)
        }
      }
    } else if (item.type === 'function_call') {
      const call = item as OutputFunctionCall
      toolCalls.push({ id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } })
    } else if (item.type === 'reasoning' && !options.isReasoningExcluded) {
      const block = item as OutputReasoning
      reasoning += reasoningTextOf(block)
      reasoningDetails.push(...reasoningDetailsOf(block, reasoningDetails.length))
    }
  }
  const images = completedImages(result.output.map(asGeneratedImage)).map(toChatImage)
  return {
    role: 'assistant' as const,
    content,
    refusal,
    ...(annotations.length > 0 ? { annotations } : {}),
    ...(reasoningDetails.length > 0 ? { reasoning, reasoning_details: reasoningDetails } : {}),
    ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    ...(images.length > 0 ? { images } : {}),
  }
}

/** The content tokens' log probabilities, in output order, when the caller asked for them. */
const logprobsOf = (result: ResponseResult, options: ChatWriterOptions) => {
  if (!options.isLogprobsRequested) return null
  const entries = result.output.flatMap((item) =>
    item.type === 'message' ? (item as OutputMessage).content.flatMap((part) => (part.type === 'output_text' ? (part.logprobs ?? []) : [])) : [],
  )
  return { content: toChatLogprobs(entries), refusal: null }
}

/** `askedTier`: the `service_tier` the request asked for, echoed when the upstream names none. */
export const toChatCompletion = (result: ResponseResult, options: ChatWriterOptions, askedTier: string | null | undefined) => {
  const provider = providerNameOf(result.servedBy)
  return {
  id: chatCompletionId(result.id),
  object: 'chat.completion' as const,
  created: result.createdAt,
  model: result.model,
  ...(provider === undefined ? {} : { provider }),
  // The tier that served the answer, as OpenAI reports it.
  service_tier: echoedServiceTier(result, askedTier),
  // OpenRouter's SDK requires the key; no provider fingerprint is carried through.
  system_fingerprint: null,
  choices: [{ index: 0, message: toMessage(result, options), logprobs: logprobsOf(result, options), finish_reason: finishReasonOf(result) }],
  ...(result.usage ? { usage: toChatUsage(result.usage) } : {}),
  ...(result.error ? { error: toChatError(result.error) } : {}),
  ...(result.serviceMetadata ? { service_metadata: result.serviceMetadata } : {}),
  }
}
