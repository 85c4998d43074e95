/** modelgate: an OpenRouter-style LLM gateway served from any host through one web `fetch` handler. */

export { createGateway, type Gateway } from './gateway/gateway'
export type { GatewayOptions } from './gateway/options'
export type { FetchHandler, ReplyHandler, ReplyOptions } from './core/types'
export type { Reply, JsonReply, EventsReply, ResponseReply } from './core/reply'
export type { ChunkProducer, ChunkSink } from './core/event-stream'
export type { GatewayAdmin } from './admin/admin'
export { createConsoleLogger, silentLogger, type Logger, type LogLevel } from './core/logger'
export {
  GatewayError,
  isGatewayError,
  InvalidRequestError,
  AuthenticationError,
  PaymentRequiredError,
  PermissionDeniedError,
  NotFoundError,
  MethodNotAllowedError,
  RequestTimeoutError,
  ConflictError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  UnprocessableError,
  RateLimitError,
  InternalError,
  UpstreamError,
  ServiceUnavailableError,
  UpstreamTimeoutError,
  UpstreamOverloadedError,
  StorageUnavailableError,
  StorageConflictError,
  type ErrorFlavor,
} from './core/errors'
export type {
  StorageDriver,
  RecordInput,
  StoredRecord,
  ListQuery,
  ListResult,
  CounterResult,
  JsonObject,
  JsonValue,
} from './storage/contract'
export { memoryStorage } from './storage/memory'
export type { ProviderConfig } from './engine/providers'
export type { ModelEntry, ModelEndpoint, EndpointPricing, Modality, OutputModality } from './engine/models'
export type { PriceOverride, PriceDocument } from './engine/prices.schemas'
export type { PriceSourceOptions, PriceReloadResult } from './engine/price-refresh'
export type { PdfOcrBackend } from './features/plugins/settings'
export { BUILT_IN_MODELS } from './engine/models'
export type { ExecutableToolType, ToolExecutor, ToolExecutorCall, ToolExecutorContext, ToolExecutorResult, ToolExecutors } from './features/server-tools/executor-types'
export { BUILT_IN_PROVIDERS, type ProviderApi, type ProviderDescriptor } from './providers/catalog'
export {
  fetchTransport,
  type UpstreamTransport,
  type UpstreamTimeouts,
  type UpstreamResponse,
  type UpstreamExchangeOptions,
} from './transport/contract'
export type { CallerDestination, HostResolver, ResolvedAddress } from './core/upstream-guard'
export type { CredentialCheck, CredentialFormat, ProviderAdapter, UpstreamCall, UpstreamTarget, UpstreamRequest, UpstreamResult, UpstreamStreamEvent } from './providers/contract'
export type { InternRuntime, InternView, ProvisioningStep, ChatContext } from './interns/runtime'
export type {
  AttemptEnded,
  AttemptEndOutcome,
  FallbackTaken,
  MetricsExporter,
  OutlierEjected,
  RequestEnded,
  ServerToolCalled,
  SpendRefused,
  StageEnded,
  StoreCalled,
  StreamsChanged,
  TelemetryEvents,
  TelemetryObserver,
} from './core/telemetry'
