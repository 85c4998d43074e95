/**
 * The caller's function tools marked `defer_loading: true` (docs/decisions.md, "Server tools"): withheld from the
 * model until `service:tool_search` finds them, then offered from the next turn on. Ranked by MiniSearch over each
 * tool's name and description (prefix and fuzzy matching, the name weighing more), so `weather` finds
 * `get_weather_forecast` and a typo still finds its tool.
 */

import MiniSearch from 'minisearch'
import type { FunctionTool } from '../../providers/types'

// Names are identifiers: `get_weather` and `getWeather` both read as the words `get weather`.
const tokenize = (text: string): string[] =>
  text
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '')

export class DeferredTools {
  readonly #byName: ReadonlyMap<string, FunctionTool & { name: string }>
  readonly #index: MiniSearch<{ id: string; name: string; description: string }>
  readonly #loaded = new Set<string>()

  constructor(tools: ReadonlyArray<FunctionTool & { name: string }>) {
    this.#byName = new Map(tools.map((tool) => [tool.name, tool]))
    this.#index = new MiniSearch({
      fields: ['name', 'description'],
      tokenize,
      searchOptions: { boost: { name: 2 }, prefix: true, fuzzy: 0.2, combineWith: 'OR' },
    })
    this.#index.addAll(tools.map((tool) => ({ id: tool.name, name: tool.name, description: tool.description ?? '' })))
  }

  get size(): number {
    return this.#byName.size
  }

  has(name: string): boolean {
    return this.#byName.has(name)
  }

  /** The deferred tools best matching `query`, best first, at most `limit`. */
  search(query: string, limit: number): Array<FunctionTool & { name: string }> {
    return this.#index
      .search(query)
      .slice(0, limit)
      .map((hit) => this.#byName.get(hit.id as string)!)
  }

  /** Offers these tools (by name; names not deferred here are ignored) from the next turn on. */
  load(names: Iterable<string>): void {
    for (const name of names) if (this.#byName.has(name)) this.#loaded.add(name)
  }

  /** The tools found so far, as the upstream is sent them: without `defer_loading`, in the caller's order. */
  loaded(): FunctionTool[] {
    return [...this.#byName.values()].filter((tool) => this.#loaded.has(tool.name)).map(withoutDeferLoading)
  }
}

/** A function tool as the upstream sees it: `defer_loading` is the gateway's to honour, not the provider's. */
export const withoutDeferLoading = <T extends FunctionTool>(tool: T): T => {
  if (!('defer_loading' in tool)) return tool
  const { defer_loading: _deferLoading, ...rest } = tool as T & { defer_loading?: boolean }
  return rest as T
}
