/**
 * The provider adapter contract. Adapters translate wire formats and nothing else: routing,
 * fallbacks, keys, billing and logging live in the engine (src/engine). The canonical format on our
 * side is the OpenAI Responses API (our own public wire). Versioned so a change is a visible decision.
 */

import type { GatewayError } from '../core/errors'
import type { CallerDestination, UpstreamGuard } from '../core/upstream-guard'
import type { ProviderApi } from './catalog'
import type { FinishStatus, UpstreamStreamEvent } from './events'
import type { NativeWebSearch, NativeWebSearchParameter, OutputItem, RequestExtensionName, RequestExtensions, ResponsesRequest, Usage } from './types'

export type { FinishStatus, ItemEvent, UpstreamStreamEvent } from './events'

/** One upstream call, as core hands it to an adapter. */
export interface UpstreamCall {
  /** The validated client request (canonical Responses shape). Adapters must not mutate it. */
  request: ResponsesRequest
  /** The provider's own model id for this endpoint (`gpt-4.1-mini`, `claude-sonnet-4-5`, …). */
  upstreamModel: string
  /** Whether the upstream is asked to stream. */
  stream: boolean
  /** A keyed hash standing in for `user` / `safety_identifier`; the raw values never go upstream. */
  endUserId?: string
  /** The largest single stream event to accept (bytes); `readSse`'s default when absent. */
  maxEventBytes?: number
  /** Settings beyond the Responses body; only those the adapter declares in `requestExtensions` are ever set. */
  extensions?: RequestExtensions
  /** Whether the endpoint honours explicit prompt caching (`prompt_cache_options`, `prompt_cache_breakpoint` markers). */
  hasExplicitPromptCache?: boolean
  /**
   * The provider's own web search, to be offered to the model beside `request.tools`; set only for an adapter that
   * declares `nativeWebSearch` with every parameter it uses. The adapter returns the searches as `web_search_call`
   * items and the pages cited as `url_citation` annotations.
   */
  nativeWebSearch?: NativeWebSearch
}

/** Where and as whom to call. */
export interface UpstreamTarget {
  /** Base URL without a trailing slash, e.g. `https://api.openai.com/v1` or a loopback fixture. */
  baseURL: string
  /** The provider credential (never logged). */
  apiKey: string
  /** Extra headers from configuration (e.g. `OpenAI-Organization`). */
  headers?: Record<string, string>
  /** Provider-specific settings from configuration (e.g. Azure `apiVersion`, a deployment URL). */
  options?: Record<string, string>
}

/** What an adapter asks the transport to send. Plain data, so core can use a pooled client. */
export interface UpstreamRequest {
  url: string
  /** `GET` only for the gateway's own fetches (server tools); a `GET` sends no body. */
  method: 'POST' | 'GET'
  headers: Record<string, string>
  body: string
  /**
   * Set when the URL's host came from the caller's credential rather than from configuration. Core then checks
   * the URL against the operator's `upstreamGuard` and the transport connects only to public addresses.
   */
  callerDestination?: CallerDestination
}

/** A complete (non-streaming) upstream answer, translated. */
export interface UpstreamResult {
  output: OutputItem[]
  /** Absent when the upstream reported none: the engine then estimates it (and says so on the record). */
  usage?: Usage
  status: FinishStatus
  /** Set when `status` is `incomplete` (e.g. `{reason: 'max_output_tokens'}`). */
  incompleteDetails: { reason: string } | null
  /** The stop sequence (`UpstreamCall.extensions.stop`) that ended the answer, when the upstream says which. */
  stopSequence?: string
  /**
   * The processing tier the upstream says it served the answer on, in the canonical (OpenAI) names `default`, `flex`,
   * `scale`, `priority`; absent when it says none the canonical names have.
   */
  serviceTier?: string
  /** The provider's own response id, for logs. */
  upstreamId?: string
}

/** One upstream embeddings call, as core hands it to an adapter's `embeddings`. */
export interface EmbeddingsCall {
  /** Texts to embed, or (where the endpoint takes them) token id arrays; one vector comes back per item. */
  input: readonly string[] | readonly (readonly number[])[]
  /** The provider's own model id for this endpoint. */
  upstreamModel: string
  /** The vectors' length, when the caller shortened them. */
  dimensions?: number
  /** What the vectors are for (`search_query`, `search_document`, or the provider's own task name). */
  inputType?: string
  /** A keyed hash standing in for `user`; the raw value never goes upstream. */
  endUserId?: string
}

/** A translated embeddings answer. */
export interface EmbeddingsResult {
  /** One vector per input item, in input order. */
  embeddings: number[][]
  /** Input tokens as the upstream counted them; absent when it reports none (core then estimates). */
  inputTokens?: number
  upstreamId?: string
}

/** Embeddings over a provider's own wire format; adapters without it serve no embedding model. */
export interface EmbeddingsAdapter {
  /** The most input items one upstream call takes; core sends larger inputs in batches. Unbounded when absent. */
  readonly maxInputsPerCall?: number
  buildRequest(call: EmbeddingsCall, target: UpstreamTarget): UpstreamRequest
  /** Translates a successful JSON body; throws an `UpstreamFailure` for a malformed one. */
  readResult(body: unknown, call: EmbeddingsCall): EmbeddingsResult
}

/**
 * A credential that is more than one opaque string, as its adapter reads it: Azure's BYOK key is a JSON list of
 * resources and deployments, each with its own `api_key` (docs/decisions.md, BYOK).
 */
export interface CredentialFormat {
  /**
   * Checks a caller's own key (BYOK) as it is stored, so a key the adapter could never use is a 400 then rather than
   * a failure at every call; a host the key names must pass `guard` now, as it will at each use.
   */
  check(rawKey: string, guard: UpstreamGuard): CredentialCheck
  /**
   * The secrets inside a raw key that travel upstream on their own (Azure's inner `api_key`s): every text an
   * upstream sends back is scrubbed of them as well as of the whole key.
   */
  innerSecrets(rawKey: string): string[]
}

/**
 * A stored key's check: the secret its label shows the end of (one inner key stands for the list), or why it is
 * refused and where in it (`0.endpoint_url`; no `path` for the key as a whole). Neither quotes the key.
 */
export type CredentialCheck = { ok: true; labelled: string } | { ok: false; path?: string; reason: string }

export interface ProviderAdapter {
  readonly contractVersion: 1
  /** The wire format's name: a `ProviderApi` for the built-in adapters, any name for one of your own. */
  readonly api: ProviderApi | (string & {})
  /**
   * The `UpstreamCall.extensions` this adapter sends upstream. Routing never hands it a call that uses any
   * other, so an adapter that declares none (a custom one written before extensions existed) drops nothing.
   */
  readonly requestExtensions?: readonly RequestExtensionName[]
  /**
   * Set when the provider runs a web search of its own that `UpstreamCall.nativeWebSearch` can ask for: the
   * parameters of it the adapter honours. Routing never hands it a native search using any other.
   */
  readonly nativeWebSearch?: readonly NativeWebSearchParameter[]
  /**
   * The tool types besides `function` this adapter sends upstream (OpenAI's `web_search`, `file_search`, `mcp`…),
   * for the provider to run or to offer. Routing never hands it a request with any other, so a tool no endpoint
   * can take is a 400 naming it rather than a tool dropped on the way.
   */
  readonly providerTools?: readonly string[]
  /**
   * The `service_tier` values (`flex`, `priority`, `scale`; `fast` is `priority`) this adapter sends upstream.
   * Routing hands an adapter a request asking for another tier than `auto` or `default` only when it declares that
   * tier, so a tier is never asked of a provider that would drop it. The answer echoes the tier the provider reports
   * having used (`UpstreamResult.serviceTier`). Absent: none.
   */
  readonly serviceTiers?: readonly string[]
  /**
   * How the adapter passes a PDF `input_file` upstream: inline (`file_data`, a data: URL) and by URL (`file_url`).
   * Absent means neither, so the file-parser plugin's `native` engine routes PDFs elsewhere.
   */
  readonly pdfInput?: { readonly fileData: boolean; readonly fileUrl: boolean }
  /**
   * How the adapter reads a structured credential, so BYOK can check and label it and no secret inside it reaches a
   * caller or a log. Absent means a key is one opaque secret, sent as it is.
   */
  readonly credential?: CredentialFormat
  /**
   * The most input messages the upstream takes, so context compression drops middle turns down to it rather than
   * send a request certain to be refused. Unbounded when absent.
   */
  readonly maxInputMessages?: number
  /**
   * The public tokenizer the upstream counts prompts in, whichever of its models serves them (OpenAI's `o200k_base`).
   * Context compression counts exactly with it; absent, it estimates with a margin (src/features/plugins/token-count.ts).
   */
  readonly promptTokenizer?: 'o200k_base'
  /**
   * Set when the upstream caches a prompt only where the request marks it (Anthropic's `cache_control`): a
   * cached-input price is then no sign that it caches on its own (`supports_implicit_caching` of an endpoint).
   */
  readonly cachesOnlyMarkedPrompts?: boolean
  /** Builds the upstream HTTP request (URL, headers with credentials, JSON body). */
  buildRequest(call: UpstreamCall, target: UpstreamTarget): UpstreamRequest
  /** Translates a successful non-streaming JSON body. */
  readResult(body: unknown, call: UpstreamCall): UpstreamResult
  /**
   * Translates a successful streaming body incrementally. Must never buffer the whole body.
   * Throws (from the iterator) a `GatewayError` for an in-band upstream error event.
   */
  readStream(body: AsyncIterable<Uint8Array>, call: UpstreamCall): AsyncIterable<UpstreamStreamEvent>
  /**
   * Turns an upstream error status and (capped) body text into a `GatewayError` carrying
   * `metadata.error_type`, surviving empty or non-JSON bodies. Never copies credentials.
   */
  toError(status: number, bodyText: string, context?: UpstreamErrorContext): GatewayError
  /** Embeddings (`POST /embeddings`), for adapters whose upstreams serve them; errors go through `toError`. */
  readonly embeddings?: EmbeddingsAdapter
}

/** What core knows about a failed exchange besides its status and body. */
export interface UpstreamErrorContext {
  /** The upstream's response headers, for `Retry-After`. */
  headers?: { get(name: string): string | null }
  /** The gateway's clock (ms since epoch), for a `Retry-After` date; `Date.now()` when absent. */
  nowMs?: number
  /** Every secret sent with the request (never logged): none may appear in the error's message. */
  secrets?: readonly string[]
}
