/**
 * modelgate/testing: test an app that embeds modelgate without a network. Scripted providers answer as the
 * test says (text, tool calls, reasoning, usage, failures, pauses) through the ordinary provider contract,
 * and `createTestGateway` serves them from the memory store with keys ready.
 */

export { createTestGateway, withScriptedProviders, TEST_MODEL, type TestGateway, type TestGatewayOptions, type TestCallInit } from './test-gateway'
export {
  scriptedProvider,
  type ScriptedProvider,
  type ScriptedProviderOptions,
  type ScriptedCall,
  type ScriptedReply,
} from './scripted-provider'
export type { ScriptedAnswer, ScriptedStep, ScriptedWait, Chunks, UpstreamErrorType } from './script'
export { readEvents, type ResponseEvent } from './read-events'
export { gate, type Gate } from './gate'
