/**
 * Content kept as a workspace's data-logging settings allow (docs/decisions.md, Stored responses): readable where the
 * workspace keeps content readable (its I/O logging), else sealed with the gateway's encryption key and bound to the
 * record it belongs to, so that moved to another record it no longer opens.
 */

import type { SealedSecret, SecretBox } from '../core/secrets'
import type { WorkspaceRecord } from '../repositories/workspaces'

export type KeptContent<T> = { plain: T } | { sealed: SealedSecret }

/** `content` as `workspace` keeps it, sealed under `associatedData` where its I/O logging is off. */
export const keepContent = async <T>(
  secrets: SecretBox,
  workspace: Pick<WorkspaceRecord, 'isObservabilityIoLoggingEnabled'>,
  content: T,
  associatedData: string,
): Promise<KeptContent<T>> =>
  workspace.isObservabilityIoLoggingEnabled ? { plain: content } : { sealed: await secrets.seal(JSON.stringify(content), associatedData) }

/** What `keepContent` kept, opened again with the same `associatedData`. */
export const openContent = async <T>(secrets: SecretBox, kept: KeptContent<T>, associatedData: string): Promise<T> =>
  'plain' in kept ? kept.plain : (JSON.parse(await secrets.open(kept.sealed, associatedData)) as T)
