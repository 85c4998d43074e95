/**
 * OpenRouter's `transforms` on `/chat/completions` and `/messages`, the older switch of context compression:
 * `["middle-out"]` turns the context-compression plugin on, `[]` turns off its default for small contexts
 * (docs/decisions.md, Plugins). A `context-compression` entry in `plugins` wins over it.
 */

import * as v from 'valibot'
import type { ResponsesRequestBody } from '../../engine/request.schemas'

export const TransformsSchema = v.optional(v.nullable(v.array(v.literal('middle-out', 'must be "middle-out", the only transform'))))

type Plugins = NonNullable<ResponsesRequestBody['plugins']>

/** The engine's plugins for a body's `plugins` and `transforms`; `undefined` when neither asks for anything. */
export const pluginsWithTransforms = (plugins: Plugins | null | undefined, transforms: readonly string[] | null | undefined): Plugins | undefined => {
  if (transforms == null || plugins?.some((plugin) => plugin.id === 'context-compression')) return plugins ?? undefined
  const compression = transforms.includes('middle-out') ? { id: 'context-compression' as const } : { id: 'context-compression' as const, enabled: false }
  return [...(plugins ?? []), compression]
}
