/** Which error body a path answers with: one rule for the gateway's errors and the API's description of them. */

import type { ErrorFlavor } from '../core/errors'

/**
 * Intern routes speak their own error body (spec Errors), even for 404 and 405; so does Anthropic's `/messages`.
 * `relativePath` is the path under the gateway's base path (`null` outside it).
 */
export const errorFlavorForPath = (relativePath: string | null): ErrorFlavor => {
  if (relativePath === null) return 'standard'
  if (/^\/interns(\/|$)/.test(relativePath)) return 'intern'
  return /^\/messages\/?$/.test(relativePath) ? 'anthropic' : 'standard'
}
