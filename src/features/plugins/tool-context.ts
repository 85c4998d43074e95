/**
 * What a server tool gets when a plugin runs it once for a request (the `web` and `web-fetch` plugins): web search
 * and web fetch read the service, the signal and the request id; they make no nested model calls and read no
 * transcript, so those are empty. A plugin's price was held before the request's attempts (spend.ts,
 * `reservePluginSpend`), so a search holds nothing more.
 */

import type { ServerToolContext } from '../server-tools/contract'
import type { InferenceService } from '../../engine/service'
import type { PluginRequest } from './contract'

export const pluginToolContext = (service: InferenceService, request: PluginRequest, signal: AbortSignal): ServerToolContext => ({
  service,
  signal,
  requestId: request.requestId,
  caller: { accountId: request.spend.account.id, workspaceId: request.spend.workspace.id },
  progress: () => {},
  nested: () => Promise.reject(new Error('a plugin runs no nested model calls')),
  holdSpend: () => Promise.resolve(),
  transcript: [],
})
