/**
 * `service:experimental__search_models`: the model searches this gateway's model catalog (the models `GET /models`
 * lists: those with an endpoint of a provider the gateway can call) by what it needs. MiniSearch ranks the slug,
 * name and description (slug and name weighing more, prefix and fuzzy matching); the model reads, and the client's
 * `service:experimental__search_models` item shows, each model's id, name, context length, prices (USD per million
 * tokens, the first endpoint's, as `GET /models` prices a model) and modalities.
 */

import MiniSearch from 'minisearch'
import * as v from 'valibot'
import type { ModelEntry } from '../../engine/models'
import type { InferenceService } from '../../engine/service'
import { ServerToolRefusal, historyPair, type ServerTool } from './contract'
import { integer } from '../../core/validation'

const DEFAULT_MAX_RESULTS = 5
const ITEM_TYPE = 'service:experimental__search_models'
const FUNCTION_NAME = 'service_experimental__search_models'

export const SearchModelsToolSchema = v.strictObject({
  type: v.literal(ITEM_TYPE),
  parameters: v.optional(v.strictObject({ max_results: v.optional(integer(1, 25)) })),
})

const CallSchema = v.object({ query: v.pipe(v.string(), v.minLength(1)) })

/** One model as the tool shows it. */
export interface FoundModel {
  id: string
  name: string
  context_length: number
  /** USD per million tokens. */
  pricing: { prompt: number; completion: number }
  input_modalities: readonly string[]
  output_modalities: readonly string[]
}

// Slugs and names are identifiers as much as words: `openai/gpt-4.1-mini` reads as `openai gpt 4 1 mini`.
const tokenize = (text: string): string[] =>
  text
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '')

const perMillion = (perToken: number) => Math.round(perToken * 1_000_000 * 1e6) / 1e6

const toFound = (entry: ModelEntry, service: InferenceService): FoundModel | undefined => {
  const served = entry.endpoints.filter((endpoint) => service.providers.get(endpoint.provider))
  if (served.length === 0) return undefined
  const { pricing } = served[0]!
  return {
    id: entry.slug,
    name: entry.name,
    context_length: Math.max(...served.map((endpoint) => endpoint.contextLength)),
    pricing: { prompt: perMillion(pricing.prompt), completion: perMillion(pricing.completion) },
    input_modalities: entry.inputModalities ?? ['text'],
    output_modalities: entry.outputModalities ?? ['text'],
  }
}

interface ModelIndex {
  revision: number
  index: MiniSearch<{ id: string; slug: string; name: string; description: string }>
  byId: ReadonlyMap<string, FoundModel>
}

// One index per catalog, rebuilt when refreshed prices replace its entries (`revision`).
const indexes = new WeakMap<object, ModelIndex>()

const indexOf = (service: InferenceService): ModelIndex => {
  const cached = indexes.get(service.models)
  if (cached && cached.revision === service.models.revision) return cached
  const byId = new Map<string, FoundModel>()
  const documents: Array<{ id: string; slug: string; name: string; description: string }> = []
  for (const entry of service.models.list()) {
    const found = toFound(entry, service)
    if (!found) continue
    byId.set(entry.slug, found)
    documents.push({ id: entry.slug, slug: entry.slug, name: entry.name, description: entry.description ?? '' })
  }
  const index = new MiniSearch<(typeof documents)[number]>({
    fields: ['slug', 'name', 'description'],
    tokenize,
    searchOptions: { boost: { slug: 3, name: 2 }, prefix: true, fuzzy: 0.2, combineWith: 'OR' },
  })
  index.addAll(documents)
  const built = { revision: service.models.revision, index, byId }
  indexes.set(service.models, built)
  return built
}

export const searchModelsTool = (tool: v.InferOutput<typeof SearchModelsToolSchema>): ServerTool => {
  const maxResults = tool.parameters?.max_results ?? DEFAULT_MAX_RESULTS
  // OpenRouter's item for this tool (`@openrouter/sdk` OutputSearchModelsServerToolItem: id, status, query, arguments), with the models found.
  const item = (id: string, status: string, query: string, models: FoundModel[]) => ({ type: ITEM_TYPE, id, status, query, arguments: JSON.stringify({ query }), models })
  return {
    type: tool.type,
    itemIdPrefix: 'sm',
    itemType: ITEM_TYPE,
    definition: {
      type: 'function',
      name: FUNCTION_NAME,
      description:
        'Searches the AI models available on this gateway by name, maker or capability. Returns each model\'s id, name, context length in tokens, ' +
        'prices in US dollars per million prompt and completion tokens, and input and output modalities.',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'What to look for, e.g. "claude", "vision", "cheap long context"' } },
        required: ['query'],
        additionalProperties: false,
      },
    },
    pendingItem: (id) => item(id, 'in_progress', '', []),
    failedItem: (id) => item(id, 'incomplete', '', []),
    toHistory(shown) {
      const query = typeof shown.query === 'string' ? shown.query : ''
      const models = Array.isArray(shown.models) ? shown.models : []
      return historyPair(shown, FUNCTION_NAME, { query }, shown.status === 'completed' ? JSON.stringify(models) : 'Not run.')
    },
    async run(call, context) {
      const parsed = v.safeParse(CallSchema, call.arguments)
      if (!parsed.success) throw new ServerToolRefusal('query must be a non-empty string')
      const { query } = parsed.output
      const { index, byId } = indexOf(context.service)
      const models = index
        .search(query)
        .slice(0, maxResults)
        .map((hit) => byId.get(hit.id as string)!)
      return {
        output: models.length === 0 ? `No models match "${query}".` : JSON.stringify(models),
        item: item(call.itemId, 'completed', query, models),
      }
    },
  }
}
