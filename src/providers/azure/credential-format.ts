/**
 * The Azure adapter's `credential` (src/providers/contract.ts): a BYOK key is the JSON list ./credentials reads,
 * checked and labelled as such, and each of its inner `api_key`s is a secret of its own.
 */

import { DestinationRefusedError, type UpstreamGuard } from '../../core/upstream-guard'
import type { CredentialCheck, CredentialFormat } from '../contract'
import { AZURE_DESTINATION, parseAzureCredentials, type AzureCredentials } from './credentials'
import { readLegacyEndpoint } from './legacy-endpoint'

const NOT_AZURE_CREDENTIALS =
  'an Azure key must be a JSON array of {api_key, resource_name, resource_type} or {model_slug, endpoint_url, api_key, model_id}'

/**
 * A legacy endpoint must pass the operator's guard now, as it will at every use (the use-time check stays: records
 * stored earlier, or a policy tightened later). The refusal names the entry and never quotes the URL or the key.
 */
const refusedEndpoint = (credentials: AzureCredentials, guard: UpstreamGuard): CredentialCheck | undefined => {
  for (const [index, entry] of credentials.entries()) {
    if (!('endpoint_url' in entry)) continue
    try {
      guard.checkUrl(entry.endpoint_url, AZURE_DESTINATION)
      readLegacyEndpoint(entry.endpoint_url, entry.model_id, 'v1')
    } catch (error) {
      if (error instanceof DestinationRefusedError) return { ok: false, path: `${index}.endpoint_url`, reason: error.reason }
      throw error
    }
  }
  return undefined
}

export const azureCredentialFormat: CredentialFormat = {
  check(rawKey, guard) {
    const credentials = parseAzureCredentials(rawKey)
    if (!credentials) return { ok: false, reason: NOT_AZURE_CREDENTIALS }
    return refusedEndpoint(credentials, guard) ?? { ok: true, labelled: credentials[0]!.api_key }
  },
  // Only a JSON list has inner keys: a plain key (the operator's, with `options.resourceName`) is sent whole.
  innerSecrets: (rawKey) => (rawKey.trimStart().startsWith('[') ? (parseAzureCredentials(rawKey) ?? []).map((entry) => entry.api_key) : []),
}
