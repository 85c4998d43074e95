/**
 * Where an Azure OpenAI call goes, and with which key. `target.apiKey` is a plain key or the BYOK
 * JSON described in docs/decisions.md (BYOK). Precedence, highest first:
 *
 * 1. The credential entry. A legacy entry `{model_slug, endpoint_url, api_key, model_id}` whose
 *    `model_slug` is the requested public model (or whose `model_id` is the upstream model) gives
 *    the endpoint and the deployment (`model_id`). Otherwise the first resource entry
 *    `{api_key, resource_name, resource_type}` gives the resource. A plain key takes the resource
 *    from `options.resourceName` (+ `options.resourceType`, default `openai`).
 * 2. The path: `openai` resources use the deployment form
 *    `/openai/deployments/{deployment}/chat/completions?api-version={apiVersion}`; `ai_foundry`
 *    resources (and `options.apiVersion: v1`) use the v1 form `/openai/v1/chat/completions`, which
 *    needs no api-version and takes the deployment as `model` in the body
 *    (learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle). The deployment is
 *    the legacy `model_id`, else `options.deployment`, else `call.upstreamModel`. A legacy URL
 *    contributes only what it says in those terms (its form, deployment name and api-version): the
 *    path is rebuilt from them, so a caller never chooses a path on anybody's host.
 * 3. The host: a non-empty `target.baseURL` always wins over the resource-derived host
 *    (`https://{resource}.openai.azure.com`, `https://{resource}.services.ai.azure.com`) and the
 *    legacy URL's origin, so configuration can point at a proxy, a regional endpoint or a
 *    loopback fixture. A baseURL that already ends in `/openai/v1` or contains
 *    `/openai/deployments/{name}` is used as the full prefix; otherwise the path is appended.
 *    A host taken from the credential is marked as the caller's (`callerDestination`), so core checks
 *    it against the operator's `upstreamGuard` (docs/decisions.md, "Upstream I/O").
 */

import type { UpstreamCall, UpstreamTarget } from '../contract'
import type { CallerDestination } from '../../core/upstream-guard'
import { AZURE_DESTINATION, parseAzureCredentials } from '../azure/credentials'
import { readLegacyEndpoint, type LegacyEndpoint } from '../azure/legacy-endpoint'
import { UpstreamFailure } from '../../core/upstream-failure'

/** The latest GA dated api-version (2024-10-21). For `reasoning_effort` use a newer preview or `v1`. */
export const AZURE_API_VERSION = '2024-10-21'

const V1_PATH = '/openai/v1'
const DEPLOYMENTS_SEGMENT = '/openai/deployments/'
const CHAT_PATH = '/chat/completions'
const TRAILING_SLASHES = /\/+$/

export interface AzureEndpoint {
  url: string
  /** The key for this endpoint (never logged). */
  apiKey: string
  /** What goes in the body's `model`: the deployment (v1) or the model id. */
  model: string
  /** Set when the host came from the credential rather than from configuration. */
  callerDestination?: CallerDestination
}

type Resource = { name: string; type: 'openai' | 'ai_foundry' }

const deploymentPath = (deployment: string, apiVersion: string) =>
  `${DEPLOYMENTS_SEGMENT}${encodeURIComponent(deployment)}${CHAT_PATH}?api-version=${encodeURIComponent(apiVersion)}`

const v1Path = (apiVersion: string | undefined) => `${V1_PATH}${CHAT_PATH}${apiVersion === 'preview' ? '?api-version=preview' : ''}`

/** A base (no trailing slash) that may already name the API surface. */
const joinBase = (base: string, path: string, apiVersion: string): string => {
  if (base.endsWith(V1_PATH)) return `${base}${CHAT_PATH}`
  if (base.includes(DEPLOYMENTS_SEGMENT)) return `${base}${CHAT_PATH}?api-version=${encodeURIComponent(apiVersion)}`
  return `${base.endsWith('/openai') ? base.slice(0, -'/openai'.length) : base}${path}`
}

export const resolveAzureEndpoint = (call: UpstreamCall, target: UpstreamTarget): AzureEndpoint => {
  const options = target.options ?? {}
  const apiVersion = options.apiVersion || AZURE_API_VERSION
  let apiKey = target.apiKey
  let deployment = options.deployment || call.upstreamModel
  let resource: Resource | undefined
  let isCallerResource = false
  let legacy: LegacyEndpoint | undefined

  if (apiKey.trimStart().startsWith('[')) {
    const credentials = parseAzureCredentials(apiKey)
    if (!credentials) {
      throw new UpstreamFailure('authentication', 'The Azure key is not a valid list of Azure credentials', { upstreamStatus: 401 })
    }
    const match =
      credentials.find((entry) => 'model_slug' in entry && entry.model_slug === call.request.model) ??
      credentials.find((entry) => 'model_slug' in entry && entry.model_id === call.upstreamModel)
    if (match && 'model_slug' in match) {
      apiKey = match.api_key
      deployment = match.model_id
      legacy = readLegacyEndpoint(match.endpoint_url, match.model_id, apiVersion)
    } else {
      const entry = credentials.find((candidate) => 'resource_name' in candidate)
      if (!entry || !('resource_name' in entry)) {
        throw new UpstreamFailure('not_found', `No Azure deployment is configured for ${call.request.model}`, { upstreamStatus: 404 })
      }
      apiKey = entry.api_key
      resource = { name: entry.resource_name, type: entry.resource_type }
      isCallerResource = true
    }
  } else if (options.resourceName) {
    resource = { name: options.resourceName, type: options.resourceType === 'ai_foundry' ? 'ai_foundry' : 'openai' }
  }

  const path = legacy
    ? legacy.isV1
      ? v1Path(legacy.apiVersion)
      : deploymentPath(legacy.deployment, legacy.apiVersion)
    : resource?.type === 'ai_foundry' || options.apiVersion === 'v1'
      ? v1Path(options.apiVersion)
      : deploymentPath(deployment, apiVersion)
  const base = target.baseURL.replace(TRAILING_SLASHES, '')
  if (base) return { url: joinBase(base, path, legacy?.apiVersion ?? apiVersion), apiKey, model: deployment }
  if (legacy) return { url: `${legacy.origin}${path}`, apiKey, model: deployment, callerDestination: AZURE_DESTINATION }
  if (resource) {
    const host = resource.type === 'ai_foundry' ? 'services.ai.azure.com' : 'openai.azure.com'
    return {
      url: `https://${resource.name}.${host}${path}`,
      apiKey,
      model: deployment,
      ...(isCallerResource ? { callerDestination: AZURE_DESTINATION } : {}),
    }
  }
  throw new UpstreamFailure('provider_unavailable', 'Azure OpenAI needs a baseURL, options.resourceName or resource credentials', {
    upstreamStatus: 502,
  })
}
