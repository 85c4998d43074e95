/**
 * A gateway server tool (`{type: "service:…", parameters}`) in a Chat Completions or Messages body: passed to the
 * engine as it is, where the server-tool plan checks its kind and parameters (docs/decisions.md, "Server tools").
 */

import * as v from 'valibot'
import { boundedJson } from '../core/validation'

export const SERVER_TOOL_TYPE_PREFIX = 'service:'

/** Whether a tool object names a gateway server tool. */
export const isServerToolEntry = (tool: unknown): boolean =>
  typeof tool === 'object' && tool !== null && typeof (tool as { type?: unknown }).type === 'string' && (tool as { type: string }).type.startsWith(SERVER_TOOL_TYPE_PREFIX)

// Loose: the plan names an unknown field by its place (`body.tools.0.engine: unknown field`), as on /responses.
export const ServerToolEntrySchema = v.looseObject({
  type: v.pipe(v.string(), v.startsWith(SERVER_TOOL_TYPE_PREFIX)),
  parameters: v.optional(boundedJson(v.unknown())),
})

export type ServerToolEntry = v.InferOutput<typeof ServerToolEntrySchema>
