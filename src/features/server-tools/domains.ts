/**
 * Domain lists of the web tools (`allowed_domains`, `blocked_domains`, `excluded_domains`): an entry is a DNS
 * name that also covers its subdomains (`example.com`, or `*.example.com`), optionally with a path prefix
 * (`example.com/docs`).
 */

import * as v from 'valibot'

export const DomainEntrySchema = v.pipe(
  v.string(),
  v.regex(/^(\*\.)?([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}(\/\S*)?$/i, 'must be a domain such as example.com, *.example.com or example.com/docs'),
)

export const DomainListSchema = v.pipe(v.array(DomainEntrySchema), v.minLength(1, 'must name at least 1 domain'), v.maxLength(100, 'must have at most 100 items'))

/** Whether `url` is under `entry`. */
export const isUnder = (url: URL, entry: string): boolean => {
  const slash = entry.indexOf('/')
  const host = (slash < 0 ? entry : entry.slice(0, slash)).toLowerCase().replace(/^\*\./, '')
  const path = slash < 0 ? '' : entry.slice(slash)
  const isHostMatch = url.hostname === host || url.hostname.endsWith(`.${host}`)
  return isHostMatch && (path === '' || url.pathname.startsWith(path))
}

/** Why `url` is outside the lists, or undefined when it may be used. Blocked entries win over allowed ones. */
export const domainRefusal = (url: URL, allowed: readonly string[] | undefined, blocked: readonly string[] | undefined): string | undefined => {
  if (blocked?.some((entry) => isUnder(url, entry))) return `${url.hostname} is blocked for this request`
  if (allowed && !allowed.some((entry) => isUnder(url, entry))) return `${url.hostname} is not among the allowed domains (${allowed.join(', ')})`
  return undefined
}
