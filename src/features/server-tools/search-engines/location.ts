/**
 * Engines that place a search by country only (Exa, Firecrawl, Parallel, Perplexity): `user_location` may name
 * a two-letter country code and nothing else, or the request is refused naming the part the engine cannot use.
 */

import type { UserLocation } from '../search-engine'

export const countryOnlyRefusal = (engine: string, location: UserLocation | undefined): { field: string; reason: string } | undefined => {
  if (!location) return undefined
  for (const field of ['city', 'region', 'timezone'] as const) {
    if (location[field] !== undefined) return { field: `user_location.${field}`, reason: `${engine} takes only a country` }
  }
  if (location.country !== undefined && !/^[A-Za-z]{2}$/.test(location.country)) return { field: 'user_location.country', reason: `must be a two-letter country code for ${engine}` }
  return undefined
}
