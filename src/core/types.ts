/** The shape every host adapter mounts: a web-standard fetch handler. */
export interface FetchHandler {
  /** Serves one request. Never rejects: every failure becomes an error `Response`. */
  fetch: (request: Request) => Promise<Response>
}
