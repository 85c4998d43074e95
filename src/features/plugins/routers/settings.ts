/** What the routers keep for the gateway's lifetime: the coding score table and the sessions' sticky choices. */

import { codingScores } from './coding-scores'
import { createStickyChoices, DEFAULT_STICKY_SESSIONS, type StickyChoices } from './sticky'

export interface RouterOptions {
  /** Coding scores (0–1) by model slug, over the built-in table (src/features/plugins/routers/coding-scores.ts). */
  codingScores?: Record<string, number>
  /** How many sessions' router choices are remembered (default 10 000; 0 for none). */
  stickySessions?: number
}

export interface RouterSettings {
  readonly codingScores: Readonly<Record<string, number>>
  readonly sticky: StickyChoices
}

export const createRouterSettings = (options: RouterOptions = {}): RouterSettings => ({
  codingScores: codingScores(options.codingScores),
  sticky: createStickyChoices(options.stickySessions ?? DEFAULT_STICKY_SESSIONS),
})
