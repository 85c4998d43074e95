/**
 * The Node upstream transport: undici's `request` over our own pooled keep-alive `Agent` (never the
 * global dispatcher, so the host application's settings are left alone). `undici.request` skips the
 * WHATWG Response machinery, which is most of fetch's cost per request.
 */

import { Agent, errors, request as undiciRequest } from 'undici'
import { UpstreamTimeoutSignal, type UpstreamTransport } from '../responses/transport'

export interface UndiciTransportOptions {
  /** Connections kept per upstream origin (default 256). */
  connectionsPerOrigin?: number
  /** How long an idle connection stays open (default 60 s). */
  keepAliveTimeoutMs?: number
}

const toHeaders = (raw: Record<string, string | string[] | undefined>): Headers => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const item of value) headers.append(name, item)
    else headers.set(name, value)
  }
  return headers
}

/**
 * Creates a pooled upstream transport for Node.
 * @example createGateway({ transport: undiciTransport() })
 */
export const undiciTransport = (options: UndiciTransportOptions = {}): UpstreamTransport & { close(): Promise<void> } => {
  const agents = new Map<number, Agent>()
  // One agent per connect timeout (the timeout is an agent setting in undici).
  const agentFor = (connectMs: number) => {
    let agent = agents.get(connectMs)
    if (!agent) {
      agent = new Agent({
        connections: options.connectionsPerOrigin ?? 256,
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 60_000,
        keepAliveMaxTimeout: 600_000,
        connect: { timeout: connectMs },
        pipelining: 1,
      })
      agents.set(connectMs, agent)
    }
    return agent
  }

  const send: UpstreamTransport = async (request, { signal, timeouts }) => {
    try {
      const response = await undiciRequest(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal,
        dispatcher: agentFor(timeouts.connectMs),
        headersTimeout: timeouts.firstByteMs,
        bodyTimeout: timeouts.totalMs,
      })
      let headers: Headers | undefined
      return {
        status: response.statusCode,
        // Built on first use: a successful answer is read without looking at its headers.
        get headers() {
          return (headers ??= toHeaders(response.headers))
        },
        body: response.body,
        text: () => response.body.text(),
        cancel: async () => {
          response.body.destroy()
        },
      }
    } catch (error) {
      if (error instanceof errors.ConnectTimeoutError) throw new UpstreamTimeoutSignal('connect')
      if (error instanceof errors.HeadersTimeoutError) throw new UpstreamTimeoutSignal('first_byte')
      if (error instanceof errors.BodyTimeoutError) throw new UpstreamTimeoutSignal('total')
      throw error
    }
  }
  return Object.assign(send, {
    close: async () => {
      await Promise.all([...agents.values()].map((agent) => agent.close()))
      agents.clear()
    },
  })
}
