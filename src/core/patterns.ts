/** Shapes of identifiers the spec fixes. */

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** spec BYOK `allowed_api_key_hashes`: the stored form of an API key. */
export const SHA256_HEX_PATTERN = /^[a-f0-9]{64}$/

/** spec Intern `model`: `<author>/<name>` with an optional `:variant`, 1 to 200 characters. */
export const MODEL_SLUG_PATTERN = /^[A-Za-z0-9~._:@+-]+\/[A-Za-z0-9~._:@+-]+$/
export const MODEL_SLUG_MAX = 200
