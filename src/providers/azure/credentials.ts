/**
 * Azure BYOK keys are JSON, not a plain string (docs/decisions.md, BYOK): a list of resources
 * `[{api_key, resource_name, resource_type: "ai_foundry" | "openai"}]`, or the legacy per-deployment
 * form `[{model_slug, endpoint_url, api_key, model_id}]`.
 */

import * as v from 'valibot'
import type { CallerDestination } from '../../core/upstream-guard'

/**
 * Where the host of an Azure credential may be: the Azure OpenAI, Cognitive Services and AI Foundry zones. The
 * operator adds more (sovereign clouds) through `upstreamGuard.extraHostSuffixes.azure`.
 */
export const AZURE_DESTINATION: CallerDestination = {
  family: 'azure',
  hostSuffixes: ['openai.azure.com', 'cognitiveservices.azure.com', 'services.ai.azure.com'],
}

const ResourceSchema = v.object({
  api_key: v.pipe(v.string(), v.minLength(1)),
  resource_name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/)),
  resource_type: v.picklist(['ai_foundry', 'openai']),
})

const DeploymentSchema = v.object({
  model_slug: v.pipe(v.string(), v.minLength(1)),
  endpoint_url: v.pipe(v.string(), v.url()),
  api_key: v.pipe(v.string(), v.minLength(1)),
  model_id: v.pipe(v.string(), v.minLength(1)),
})

export const AzureCredentialsSchema = v.pipe(
  v.array(v.union([ResourceSchema, DeploymentSchema])),
  v.minLength(1),
  v.maxLength(100),
)
export type AzureCredentials = v.InferOutput<typeof AzureCredentialsSchema>

/** Parses an Azure key; `null` when it is not one of the accepted shapes. Never echoes the input. */
export const parseAzureCredentials = (raw: string): AzureCredentials | null => {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    return null
  }
  const result = v.safeParse(AzureCredentialsSchema, value)
  return result.success ? result.output : null
}
