/**
 * One JSON request a plugin makes to a service the operator configured (the moderation API): through the
 * gateway's transport, bounded like an upstream call (the service's timeouts, the whole exchange within
 * `totalMs`, the answer within `MAX_ANSWER_BYTES`). Failures become a 502 naming the service, never quoting its
 * body (it may echo the key sent).
 */

import { UpstreamError } from '../../core/errors'
import type { UpstreamRequest } from '../../providers/contract'
import type { InferenceService } from '../../engine/service'
import { UpstreamTimeoutSignal, UpstreamTooLargeSignal, readBodyText } from '../../transport/contract'

const MAX_ANSWER_BYTES = 1024 * 1024

export const requestServiceJson = async (service: InferenceService, request: UpstreamRequest, what: string, signal: AbortSignal): Promise<unknown> => {
  const { transport, timeouts } = service
  const controller = new AbortController()
  const onAbort = () => controller.abort(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(() => controller.abort(new UpstreamTimeoutSignal('total')), timeouts.totalMs)
  const fail = (reason: string, cause?: unknown) => new UpstreamError(`${what} is unavailable: ${reason}`, cause === undefined ? undefined : { cause })
  try {
    const response = await transport(request, { signal: controller.signal, timeouts })
    if (response.status < 200 || response.status >= 300) {
      await response.cancel()
      throw fail(`it answered HTTP ${response.status}`)
    }
    const text = await readBodyText(response.body, MAX_ANSWER_BYTES).finally(() => void response.cancel())
    try {
      return JSON.parse(text)
    } catch (error) {
      throw fail('it sent a malformed answer', error)
    }
  } catch (error) {
    if (signal.aborted || error instanceof UpstreamError) throw error
    if (error instanceof UpstreamTimeoutSignal || controller.signal.reason instanceof UpstreamTimeoutSignal) throw fail('it did not answer in time')
    if (error instanceof UpstreamTooLargeSignal) throw fail('its answer is too large')
    throw fail('it could not be reached', error)
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
}
