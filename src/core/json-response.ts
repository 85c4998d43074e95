/**
 * JSON answers inside the gateway. A web `Response` built from a string wraps it in a byte stream at once, and
 * a Node host then reads that stream back chunk by chunk: together about a tenth of a small request's CPU.
 * So routes answer with a `JsonResponse`, a `Response` that keeps its JSON text and makes a stream
 * only when someone asks for `body`. `gateway.fetch` hands every caller a plain `Response` (a host runtime's
 * native server reads a Response's own internals and would see no body); only the Node bridge, through
 * `FETCH_UNMATERIALIZED` (materialize.ts), receives a `JsonResponse` and writes its text straight to the socket.
 */

const encoder = new TextEncoder()

const usedBodyError = () => new TypeError('Body is unusable: Body has already been read')

export class JsonResponse extends Response {
  readonly #text: string
  #stream: ReadableStream<Uint8Array<ArrayBuffer>> | undefined
  #isRead = false

  constructor(text: string, init: { status: number; headers: Headers }) {
    super(null, init)
    this.#text = text
  }

  /** The JSON text, for a host that writes it out itself. */
  get jsonText(): string {
    return this.#text
  }

  // An accessor, so the stream is only made for a caller that reads `body` itself.
  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> {
    if (!this.#stream) {
      const bytes = encoder.encode(this.#text)
      this.#stream = new ReadableStream<Uint8Array<ArrayBuffer>>({
        start(controller) {
          controller.enqueue(bytes)
          controller.close()
        },
      })
    }
    return this.#stream
  }

  override get bodyUsed(): boolean {
    return this.#isRead || (this.#stream?.locked ?? false)
  }

  override async text(): Promise<string> {
    if (this.bodyUsed) throw usedBodyError()
    this.#isRead = true
    return this.#text
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text())
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    return encoder.encode(await this.text()).buffer as ArrayBuffer
  }

  override async blob(): Promise<Blob> {
    return new Blob([await this.text()], { type: this.headers.get('content-type') ?? '' })
  }

  override clone(): JsonResponse {
    if (this.bodyUsed) throw usedBodyError()
    return new JsonResponse(this.#text, { status: this.status, headers: new Headers(this.headers) })
  }

  /** A plain `Response` with the same status, headers and body. */
  toResponse(): Response {
    if (this.bodyUsed) throw usedBodyError()
    return new Response(this.#text, { status: this.status, statusText: this.statusText, headers: this.headers })
  }
}

/** A JSON `Response` with the given status and extra headers. */
export const jsonResponse = (text: string, status: number, headers?: HeadersInit): JsonResponse => {
  const responseHeaders = new Headers(headers)
  responseHeaders.set('content-type', 'application/json')
  return new JsonResponse(text, { status, headers: responseHeaders })
}

/** A JSON success response. */
export const json = (data: unknown, status = 200, headers?: HeadersInit): Response => jsonResponse(JSON.stringify(data), status, headers)
