/**
 * What the Redis driver's scripts share: how a script is sent (by its SHA, with its source as the fallback),
 * how key parts are escaped on both sides, and how Lua writes numbers so JavaScript reads the same double back.
 */
import { createHash } from 'node:crypto'

export interface Script {
  lua: string
  sha: string
}

export const defineScript = (lua: string): Script => ({ lua, sha: createHash('sha1').update(lua).digest('hex') })

/** Lone UTF-16 surrogates cannot be sent as UTF-8: two different ids would reach Redis as the same bytes. */
export const hasLoneSurrogate = (text: string): boolean => /\p{Cs}/u.test(text)

export const assertKeyText = (text: string, name: string): void => {
  if (hasLoneSurrogate(text)) throw new TypeError(`modelgate storage: ${name} must not contain lone surrogates`)
}

/** Must match `enc` in `LUA_ENCODE`: both escape the same four ASCII bytes. */
export const encodeKeyPart = (text: string): string =>
  text.replace(/[%:{}]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`)

// Kept as `String.raw` so Lua's escapes reach it as written.
export const LUA_ENCODE = String.raw`
local function enc(text)
  return (string.gsub(text, '[%%:{}]', function(character)
    return string.format('%%%02X', string.byte(character))
  end))
end
`

/**
 * Sums are taken in Lua, whose numbers are doubles like JavaScript's, and written back with enough digits to
 * round-trip; INCRBYFLOAT would add in long double and print 17 fixed decimals.
 */
export const LUA_FORMAT_NUMBER = String.raw`
local function formatNumber(number)
  for precision = 15, 17 do
    local text = string.format('%.' .. precision .. 'g', number)
    if tonumber(text) == number then return text end
  end
  return string.format('%.17g', number)
end
`

/** The server's clock in Unix milliseconds, so every process sees the same windows and expiries. */
export const LUA_NOW = String.raw`
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
`

/** Lua returns numbers it cannot print as JSON would (`inf`, `nan`); everything else is plain decimal. */
export const parseLuaNumber = (text: string): number => {
  if (text === 'inf') return Number.POSITIVE_INFINITY
  if (text === '-inf') return Number.NEGATIVE_INFINITY
  return Number(text)
}
