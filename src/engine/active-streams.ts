/**
 * The Responses streams a gateway is serving, so a host that shuts down can end each one in-band
 * (`response.failed`, then `[DONE]`) instead of cutting its connection: clients then see a failure
 * they know to retry, not a truncated answer.
 */

import { NO_TELEMETRY, type Telemetry } from '../core/telemetry'

/** The message streams end with when the host gives none. */
export const SHUTDOWN_MESSAGE = 'The gateway is shutting down; retry the request'

export interface ActiveStream {
  /** Ends the stream in-band with `message` and aborts its upstream exchange. */
  end(message: string): void
}

export interface ActiveStreams {
  add(stream: ActiveStream): void
  delete(stream: ActiveStream): void
  endAll(message?: string): void
}

export const createActiveStreams = (telemetry: Telemetry = NO_TELEMETRY): ActiveStreams => {
  const streams = new Set<ActiveStream>()
  return {
    add(stream) {
      streams.add(stream)
      telemetry.streamsChanged?.({ active: streams.size })
    },
    delete(stream) {
      if (streams.delete(stream)) telemetry.streamsChanged?.({ active: streams.size })
    },
    endAll(message = SHUTDOWN_MESSAGE) {
      // Each stream removes itself as it ends; iterate over a copy.
      for (const stream of [...streams]) stream.end(message)
    },
  }
}
