/**
 * A small router compiled once at start-up: static and `:param` segments under a base path.
 * It matches the path first and the method second, so a known path with the wrong method can
 * answer 405 with the methods it does allow.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

interface CompiledPath<R> {
  segments: ReadonlyArray<{ literal: string } | { param: string }>
  routes: Map<string, R>
}

export type RouteMatch<R> =
  | { kind: 'found'; route: R; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allow: string[] }
  | { kind: 'not-found' }

/** Normalises a configured base path: leading slash, no trailing slash, `''` for the root. */
export const normalizeBasePath = (basePath: string): string => {
  const trimmed = basePath.trim().replace(/\/+$/, '')
  if (trimmed === '') return ''
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`
}

const splitPath = (path: string): string[] => path.split('/').filter((segment) => segment !== '')

export interface Router<R> {
  match(method: string, pathname: string): RouteMatch<R>
  /** The path relative to the base, or `null` when the request is outside it. */
  relativePath(pathname: string): string | null
}

export const createRouter = <R extends { method: HttpMethod; path: string }>(
  basePath: string,
  routes: readonly R[],
): Router<R> => {
  const base = normalizeBasePath(basePath)
  const paths: CompiledPath<R>[] = []

  for (const route of routes) {
    const segments = splitPath(route.path).map((segment) =>
      segment.startsWith(':') ? { param: segment.slice(1) } : { literal: segment },
    )
    const key = segments.map((segment) => ('literal' in segment ? segment.literal : ':')).join('/')
    let compiled = paths.find(
      (candidate) => candidate.segments.map((segment) => ('literal' in segment ? segment.literal : ':')).join('/') === key,
    )
    if (!compiled) {
      compiled = { segments, routes: new Map() }
      paths.push(compiled)
    }
    if (compiled.routes.has(route.method)) throw new Error(`modelgate: duplicate route ${route.method} ${route.path}`)
    compiled.routes.set(route.method, route)
  }
  // Static segments win over params at the same position (`/keys/current` before `/keys/:hash`).
  paths.sort((left, right) => {
    for (let index = 0; index < Math.min(left.segments.length, right.segments.length); index++) {
      const leftStatic = 'literal' in left.segments[index]!
      const rightStatic = 'literal' in right.segments[index]!
      if (leftStatic !== rightStatic) return leftStatic ? -1 : 1
    }
    return 0
  })

  const relativePath = (pathname: string): string | null => {
    if (base === '') return pathname
    if (pathname === base) return '/'
    return pathname.startsWith(`${base}/`) ? pathname.slice(base.length) : null
  }

  const matchSegments = (compiled: CompiledPath<R>, parts: string[]): Record<string, string> | null => {
    if (compiled.segments.length !== parts.length) return null
    const params: Record<string, string> = {}
    for (let index = 0; index < parts.length; index++) {
      const segment = compiled.segments[index]!
      const part = parts[index]!
      if ('literal' in segment) {
        if (segment.literal !== part) return null
      } else {
        try {
          params[segment.param] = decodeURIComponent(part)
        } catch {
          return null
        }
      }
    }
    return params
  }

  return {
    relativePath,
    match(method, pathname) {
      const relative = relativePath(pathname)
      if (relative === null) return { kind: 'not-found' }
      // One trailing slash is tolerated: some clients post to `/keys/`.
      const parts = splitPath(relative)
      for (const compiled of paths) {
        const params = matchSegments(compiled, parts)
        if (!params) continue
        const route = compiled.routes.get(method)
        if (route) return { kind: 'found', route, params }
        return { kind: 'method-not-allowed', allow: [...compiled.routes.keys()] }
      }
      return { kind: 'not-found' }
    },
  }
}
