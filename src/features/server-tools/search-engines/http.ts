/**
 * One request to a search engine's API through the gateway's transport, bounded like an upstream call: the
 * service's timeouts, the whole exchange within `totalMs`, the body within `maxBytes`. Failures become
 * `ServerToolFailure`s whose message never quotes the engine's body (it may echo the key sent).
 */

import type { UpstreamRequest } from '../../../providers/contract'
import { UpstreamTimeoutSignal, UpstreamTooLargeSignal, readBodyText } from '../../../transport/contract'
import type { SearchContext } from '../search-engine'
import { ServerToolFailure } from '../tool-errors'

const MAX_ANSWER_BYTES = 4 * 1024 * 1024

export const requestJson = async (engine: string, request: UpstreamRequest, { transport, timeouts, signal }: SearchContext): Promise<unknown> => {
  const controller = new AbortController()
  const onAbort = () => controller.abort(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  const timer = setTimeout(() => controller.abort(new UpstreamTimeoutSignal('total')), timeouts.totalMs)
  try {
    const response = await transport(request, { signal: controller.signal, timeouts })
    if (response.status < 200 || response.status >= 300) {
      await response.cancel()
      throw new ServerToolFailure(`the ${engine} search engine answered HTTP ${response.status}`)
    }
    const text = await readBodyText(response.body, MAX_ANSWER_BYTES).finally(() => void response.cancel())
    try {
      return JSON.parse(text)
    } catch (error) {
      throw new ServerToolFailure(`the ${engine} search engine sent a malformed answer`, { cause: error })
    }
  } catch (error) {
    if (signal.aborted || error instanceof ServerToolFailure) throw error
    if (error instanceof UpstreamTimeoutSignal || controller.signal.reason instanceof UpstreamTimeoutSignal) throw new ServerToolFailure(`the ${engine} search engine did not answer in time`)
    if (error instanceof UpstreamTooLargeSignal) throw new ServerToolFailure(`the ${engine} search engine's answer is too large`)
    throw new ServerToolFailure(`the ${engine} search engine could not be reached`, { cause: error })
  } finally {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort)
  }
}
