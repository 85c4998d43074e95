/**
 * Models for providers configured in the environment. The built-in catalog only lists models of built-in
 * providers, so a provider defined by `MODELGATE_PROVIDER_<ID>_*` variables alone (a self-hosted vLLM, say)
 * would have nothing to serve; `MODELGATE_PROVIDER_<ID>_MODELS` lists its models in one line.
 */

import { MODEL_SLUG_PATTERN } from '../core/patterns'
import type { ModelEntry } from '../engine/models'
import { providerIdOf } from './config'

/**
 * Assumed for models declared in one line, whose limits the environment does not say; a config-file
 * `models` entry can give the real figures.
 */
export const ENVIRONMENT_MODEL_CONTEXT_LENGTH = 131_072

const MODELS_VARIABLE = /^MODELGATE_PROVIDER_([A-Z0-9_]+)_MODELS$/

/**
 * Reads `MODELGATE_PROVIDER_<ID>_MODELS=<slug>=<upstream model>,<slug>,…` (without `=`, the upstream model id is
 * the slug). Prices are 0, as for self-hosted models; a slug listed for several providers gets one endpoint each.
 */
export const modelsFromEnvironment = (environment: Record<string, string | undefined>): ModelEntry[] => {
  const bySlug = new Map<string, ModelEntry>()
  for (const [name, value] of Object.entries(environment)) {
    const match = MODELS_VARIABLE.exec(name)
    if (!match || !value) continue
    const provider = providerIdOf(match[1]!)
    for (const item of value.split(',').map((part) => part.trim()).filter(Boolean)) {
      const separator = item.indexOf('=')
      const slug = separator === -1 ? item : item.slice(0, separator).trim()
      const upstreamModel = separator === -1 ? item : item.slice(separator + 1).trim()
      if (!MODEL_SLUG_PATTERN.test(slug) || upstreamModel === '') {
        throw new Error(`modelgate: ${name}: "${item}" must be <author>/<name>=<upstream model id>, or a slug <author>/<name>`)
      }
      const entry = bySlug.get(slug) ?? { slug, name: slug, endpoints: [] }
      entry.endpoints.push({ provider, model: upstreamModel, contextLength: ENVIRONMENT_MODEL_CONTEXT_LENGTH, pricing: { prompt: 0, completion: 0 } })
      bySlug.set(slug, entry)
    }
  }
  return [...bySlug.values()]
}
