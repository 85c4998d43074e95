/** The plugins a request runs, in order: the plugins' own state on the request (src/engine/request-slot.ts). */

import { requestSlot } from '../../engine/request-slot'
import type { RequestPlugin } from './contract'

const PLUGINS = requestSlot<readonly RequestPlugin[]>('plugins')

const NONE: readonly RequestPlugin[] = []

/** The request's plugins; none for a request that was given none (a fusion panel member's, a nested call's). */
export const pluginsOf = (request: object): readonly RequestPlugin[] => PLUGINS.get(request) ?? NONE

export const setPlugins = (request: object, plugins: readonly RequestPlugin[]): void => PLUGINS.set(request, plugins)
