/**
 * Sticky router choices (docs/decisions.md, "Plugins: routers and fusion"): a session's first routed answer fixes
 * its models for the session's later requests, so a conversation keeps one model (and its prompt cache). Kept in
 * this process's memory, least recently used first out past `capacity`: a restart, or another gateway process,
 * routes the session afresh, which costs a cache miss and never a wrong answer.
 */

export interface StickyChoices {
  get(key: string): readonly string[] | undefined
  set(key: string, models: readonly string[]): void
  readonly size: number
}

/** Sessions remembered unless `routers.stickySessions` says otherwise. */
export const DEFAULT_STICKY_SESSIONS = 10_000

export const createStickyChoices = (capacity: number): StickyChoices => {
  // A Map iterates in insertion order: re-inserting on use makes its first key the least recently used.
  const choices = new Map<string, readonly string[]>()
  return {
    get(key) {
      const models = choices.get(key)
      if (models === undefined) return undefined
      choices.delete(key)
      choices.set(key, models)
      return models
    },
    set(key, models) {
      if (capacity === 0) return
      choices.delete(key)
      choices.set(key, models)
      if (choices.size > capacity) choices.delete(choices.keys().next().value!)
    },
    get size() {
      return choices.size
    },
  }
}

/** One session's key: per workspace, so one workspace's session ids never steer another's. */
export const stickyKey = (workspaceId: string, router: string, sessionId: string) => `${workspaceId}\u0000${router}\u0000${sessionId}`
