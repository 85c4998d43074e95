/**
 * The features' settings on the inference service: each feature's entry of the engine's `FeatureSettings`
 * (src/engine/service.ts), declared here so the engine names no feature, and built once by the composition root.
 */

import type { UpstreamGuardOptions } from '../core/upstream-guard'
import type { ProviderRegistry } from '../engine/providers'
import { createPluginSettings, type PluginOptions, type PluginSettings } from './plugins/settings'
import { createRouterSettings, type RouterOptions, type RouterSettings } from './plugins/routers/settings'
import { createServerToolSettings, type ServerToolOptions, type ServerToolSettings } from './server-tools/settings'
import { createResponseCacheSettings, type ResponseCacheSettings } from './response-cache/settings'

declare module '../engine/service' {
  interface FeatureSettings {
    /** What the server tools the gateway runs may do and reach (web fetch limits, search engines). */
    readonly serverTools: ServerToolSettings
    /** The router models' coding scores and sticky sessions (src/features/plugins/routers/). */
    readonly routers: RouterSettings
    /** What plugins use: the moderation API, PDF limits and OCR backends. */
    readonly plugins: PluginSettings
    /** The response cache's caps and what a hit is charged (src/features/response-cache/). */
    readonly responseCache: ResponseCacheSettings
  }
}

export interface FeatureOptions {
  serverTools?: ServerToolOptions
  routers?: RouterOptions
  plugins?: PluginOptions
  responseCache?: Parameters<typeof createResponseCacheSettings>[0]
  /** Where server tools may fetch from, as upstream calls may. */
  upstreamGuard?: UpstreamGuardOptions
}

export const createFeatureSettings = (options: FeatureOptions, providers: ProviderRegistry) => ({
  serverTools: createServerToolSettings(options.serverTools, options.upstreamGuard),
  routers: createRouterSettings(options.routers),
  plugins: createPluginSettings(options.plugins, providers),
  responseCache: createResponseCacheSettings(options.responseCache),
})
