/**
 * The event-loop watch the gateway reports (docs/decisions.md, "No tenant can stall the gateway"). Measuring needs
 * the host (Node's `perf_hooks`), so the gateway takes a monitor from its host: `createEventLoopMonitor()` of
 * `modelgate/adapters/node`, which the runner uses; without one `/health/ready` has no `event_loop` check.
 */

/** Event-loop delay in milliseconds, over the monitor's last full window and the current one. */
export interface EventLoopDelay {
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** The length of one window. */
  windowSeconds: number
  /** The delay past which the monitor warns; `isSlow` says whether p99 or the maximum went past it. */
  thresholdMs: number
  isSlow: boolean
}

export interface EventLoopMonitor {
  read(): EventLoopDelay
  /**
   * Called as a request starts, with its route (`POST /responses`); the function it returns is called once the
   * request has answered. Lets a warning name the routes that were running when the loop stalled.
   */
  track?(route: string): () => void
}
