/**
 * The kit's upstream transport: requests to scripted providers (`modelgate-scripted://<id>`) are answered
 * in-process, with no socket, and everything else goes to the transport the gateway would use anyway.
 * Scripted answers go through `fetchTransport` like any fetch answer, so the gateway's deadlines, idle
 * watch and aborts apply to them as to a real upstream.
 */

import { fetchTransport, type UpstreamTransport } from '../transport/contract'
import type { AnswerPlan, ScriptedWait } from './script'
import { SCRIPTED, type ScriptedCall, type ScriptedProvider } from './scripted-provider'
import { SCRIPTED_URL_SCHEME, encodeStreamStep, type WireErrorBody, type WireRequest, type WireStep } from './wire'

const aborted = (signal: AbortSignal) => signal.reason ?? new DOMException('The operation was aborted', 'AbortError')

/** Waits out one scripted pause, or fails as soon as the exchange is aborted. */
const waitFor = (wait: ScriptedWait, signal: AbortSignal): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(aborted(signal))
    let timer: ReturnType<typeof setTimeout> | undefined
    const onAbort = () => {
      clearTimeout(timer)
      reject(aborted(signal))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    const done = () => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }
    if ('ms' in wait) timer = setTimeout(done, wait.ms)
    else
      Promise.resolve(wait.until).then(done, (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      })
  })

const jsonError = (status: number, message: string, headers: Record<string, string> = {}, type?: WireErrorBody['error']['type']) =>
  new Response(JSON.stringify({ error: { message, ...(type ? { type } : {}) } } satisfies WireErrorBody), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })

/** The answer's body, produced as the gateway reads it: a JSON array when whole, one event per step when streamed. */
const answerBody = (body: AnswerPlan['body'], isStream: boolean, signal: AbortSignal): ReadableStream<Uint8Array> => {
  const encoder = new TextEncoder()
  let index = 0
  let isFirst = true
  const encode = (step: WireStep) => {
    const text = isStream ? encodeStreamStep(step) : `${isFirst ? '[' : ','}${JSON.stringify(step)}`
    isFirst = false
    return encoder.encode(text)
  }
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        // A real fetch body fails when its request is aborted; so does this one, even between two reads.
        signal.addEventListener('abort', () => {
          try {
            controller.error(aborted(signal))
          } catch {
            // Already closed: nothing is left to fail.
          }
        })
      },
      async pull(controller) {
        while (index < body.length) {
          const item = body[index++]!
          if (item.type === 'wait') {
            await waitFor(item, signal)
            continue
          }
          controller.enqueue(encode(item))
          return
        }
        if (!isStream) controller.enqueue(encoder.encode(isFirst ? '[]' : ']'))
        controller.close()
      },
    },
    // Nothing is produced ahead of the reader: a wait starts when the gateway asks for what follows it.
    { highWaterMark: 0 },
  )
}

/** What the transport needs of a scripted provider: its script, played per call. */
export type ScriptPlayer = Pick<ScriptedProvider, typeof SCRIPTED>

const bearerOf = (headers: HeadersInit | undefined) => new Headers(headers).get('authorization')?.replace(/^Bearer /, '') ?? ''

/** A fetch that answers scripted providers' requests by playing their scripts. */
const scriptedFetch = (providers: Readonly<Record<string, ScriptPlayer>>) => async (input: RequestInfo | URL, init: RequestInit = {}) => {
  const id = new URL(String(input)).hostname
  const provider = providers[id]
  if (!provider) return jsonError(404, `modelgate/testing: no scripted provider "${id}"`)
  const wire = JSON.parse(String(init.body)) as WireRequest
  const request = wire.request as ScriptedCall['request']
  const signal = init.signal ?? new AbortController().signal
  const call: ScriptedCall = {
    provider: id,
    model: wire.model,
    request,
    input: request.input,
    tools: request.tools ?? [],
    stream: wire.stream,
    apiKey: bearerOf(init.headers),
    ...(wire.endUserId ? { endUserId: wire.endUserId } : {}),
    signal,
  }
  let plan: AnswerPlan
  try {
    plan = await provider[SCRIPTED](call)
  } catch (error) {
    // A mistake in the script reaches the test as the provider's failure, message and all.
    return jsonError(500, error instanceof Error ? error.message : String(error))
  }
  for (const wait of plan.leading) await waitFor(wait, signal)
  const { failure } = plan
  if (failure) return jsonError(failure.status, failure.message, failure.retryAfter === undefined ? {} : { 'retry-after': failure.retryAfter }, failure.errorType)
  return new Response(answerBody(plan.body, wire.stream, signal), {
    status: 200,
    headers: { 'content-type': wire.stream ? 'text/event-stream' : 'application/json' },
  })
}

/**
 * A transport that answers the given scripted providers in-process and sends every other request through
 * `fallback` (default: the runtime's fetch). `withScriptedProviders` installs it.
 */
export const scriptedTransport = (providers: Readonly<Record<string, ScriptPlayer>>, fallback: UpstreamTransport = fetchTransport()): UpstreamTransport => {
  const inProcess = fetchTransport(scriptedFetch(providers))
  const transport: UpstreamTransport = (request, options) => (request.url.startsWith(SCRIPTED_URL_SCHEME) ? inProcess(request, options) : fallback(request, options))
  // Scripted requests never carry a caller's destination, so only the fallback's connect guard matters.
  return fallback.hasConnectGuard ? Object.assign(transport, { hasConnectGuard: true as const }) : transport
}
