/**
 * A gateway server tool (`{type: "service:…", parameters}`) in a Chat Completions or Messages body: passed to the
 * engine as it is, where the server-tool plan checks its kind and parameters (docs/decisions.md, "Server tools").
 */

import * as v from 'valibot'
import { boundedJson } from '../../core/validation'
import { withServerToolName } from '../../engine/request.schemas'

/** Whether a tool object names a gateway server tool (`service:…`, or OpenRouter's name for it, `openrouter:…`). */
export const isServerToolEntry = (tool: unknown): boolean => {
  const type = typeof tool === 'object' && tool !== null ? (tool as { type?: unknown }).type : undefined
  return typeof type === 'string' && (type.startsWith('service:') || type.startsWith('openrouter:'))
}

// Loose: the plan names an unknown field by its place (`body.tools.0.engine: unknown field`), as on /responses.
export const ServerToolEntrySchema = v.pipe(
  v.looseObject({ type: v.string(), parameters: v.optional(boundedJson(v.unknown())) }),
  v.transform(withServerToolName),
)

export type ServerToolEntry = v.InferOutput<typeof ServerToolEntrySchema>
