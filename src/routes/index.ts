import type { AnyRoute } from '../core/route'
import { createKey, deleteKey, getKey, listKeys, updateKey } from './keys'
import { getWorkspace } from './workspaces'

/** Every route the gateway serves, relative to its base path. */
export const routes: readonly AnyRoute[] = [listKeys, createKey, getKey, updateKey, deleteKey, getWorkspace]
