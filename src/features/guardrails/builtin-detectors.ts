/**
 * The builtin content detectors (`content_filter_builtins`). Each is a few patterns plus, where the format has
 * one, a check a pattern cannot express (Luhn for card numbers, area numbers for SSNs, address parsing for IPv6,
 * entropy for unprefixed secrets). How well each one does is written down in docs/guardrails.md: they are
 * pattern matchers, not a trained PII model.
 *
 * These patterns are ours, so they run on V8's engine, about ten times faster than re2js on prose. Each is
 * written so that backtracking stays bounded: every repetition is either capped or cannot match the same text
 * two ways (its items start with distinct characters or are separated by one), and a match, once found, is
 * never searched again. The hostile-input test in test/unit/engine/guardrails-builtins.test.ts holds them to it.
 * Operators' patterns, which nobody audits, go through re2js (content-pattern.ts).
 */

import ipaddr from 'ipaddr.js'
import type { ContentFilterBuiltinSlug } from '../../repositories/guardrails'
import type { Span } from './content-pattern'

type Detector = (text: string) => Span[]

const compile = (pattern: string, flags = '') => new RegExp(pattern, `g${flags}`)

/** Every non-empty match of a global `regex` in `text`, left to right. */
const findAll = (regex: RegExp, text: string): Span[] => {
  const spans: Span[] = []
  for (const match of text.matchAll(regex)) if (match[0].length > 0) spans.push({ start: match.index, end: match.index + match[0].length })
  return spans
}

/** Spans of `regex` that `accept` keeps (given the matched text). */
const matching =
  (regex: RegExp, accept: (matched: string) => boolean = () => true): Detector =>
  (text) =>
    findAll(regex, text).filter((span) => accept(text.slice(span.start, span.end)))

/** All detectors' spans, left to right, overlapping ones merged. */
const anyOf =
  (...detectors: Detector[]): Detector =>
  (text) =>
    mergeSpans(detectors.flatMap((detector) => detector(text)))

/** Sorts spans and merges those that overlap or touch. */
export const mergeSpans = (spans: Span[]): Span[] => {
  const sorted = [...spans].sort((left, right) => left.start - right.start || right.end - left.end)
  const merged: Span[] = []
  for (const span of sorted) {
    const last = merged.at(-1)
    if (last && span.start <= last.end) last.end = Math.max(last.end, span.end)
    else merged.push({ ...span })
  }
  return merged
}

const digitsOf = (text: string) => text.replace(/\D/g, '')

// `email`: local@domain.tld, the shape RFC 5322 addresses take in prose (no quoted local parts).
// A match starts only where a run of address characters starts (the lookbehind), so a long run without an "@"
// is read once, not once per character.
const EMAIL = compile(String.raw`(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?){0,8}\.[A-Za-z]{2,24}\b`)

// `phone`: international (+CC …) or North American ((555) 123-4567, 555-123-4567, 555.123.4567).
const PHONE_INTERNATIONAL = compile(String.raw`\+[1-9][0-9]{0,2}[ .-]?(?:\(?[0-9]{1,4}\)?[ .-]?){1,4}[0-9]{2,4}\b`)
const PHONE_NANP = compile(String.raw`(?:\([2-9][0-9]{2}\) ?|\b[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4}\b`)
const isPhoneLength = (matched: string) => {
  const digits = digitsOf(matched).length
  return digits >= 8 && digits <= 15
}

// `ssn`: AAA-GG-SSSS; area 000, 666 and 9xx, group 00 and serial 0000 are never issued.
const SSN = compile(String.raw`\b[0-9]{3}[- ][0-9]{2}[- ][0-9]{4}\b`)
const isIssuableSsn = (matched: string) => {
  const digits = digitsOf(matched)
  const area = digits.slice(0, 3)
  return area !== '000' && area !== '666' && area[0] !== '9' && digits.slice(3, 5) !== '00' && digits.slice(5) !== '0000'
}

// `credit-card`: 13 to 19 digits, optionally grouped by spaces or dashes, passing the Luhn check.
const CARD = compile(String.raw`\b[0-9](?:[ -]?[0-9]){12,18}\b`)
export const passesLuhn = (digits: string): boolean => {
  let sum = 0
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48
    if (index % 2 === 1) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
  }
  return sum % 10 === 0
}
// A run of one digit ("0000 0000 0000 0000") passes Luhn but is a placeholder, not a card.
const isCardNumber = (matched: string) => {
  const digits = digitsOf(matched)
  return digits.length >= 13 && digits.length <= 19 && !/^(\d)\1+$/.test(digits) && passesLuhn(digits)
}

// `ip-address`: dotted-quad IPv4, and IPv6 candidates confirmed by a real parser.
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])'
const IPV4 = compile(String.raw`\b${OCTET}(?:\.${OCTET}){3}\b`)
const IPV6_CANDIDATE = compile(String.raw`(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|${OCTET}(?:\.${OCTET}){3})?`)
// "::" alone, or a clock time ("10:30:00"), parses or looks like an address without being one.
const isIpv6 = (matched: string) => matched.length >= 6 && /[0-9A-Fa-f]/.test(matched) && matched.includes(':') && ipaddr.IPv6.isValid(matched) && !/^\d{1,2}:\d{2}(:\d{2})?$/.test(matched)

// `secrets`: known token formats, then long random-looking strings.
const KNOWN_SECRETS = compile(
  [
    String.raw`sk-ant-[A-Za-z0-9_-]{20,}`,
    String.raw`sk-(?:proj-|svcacct-|or-v1-)?[A-Za-z0-9_-]{20,}`,
    String.raw`\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}`,
    String.raw`\bgh[pousr]_[A-Za-z0-9]{30,}`,
    String.raw`\bgithub_pat_[A-Za-z0-9_]{22,}`,
    String.raw`\bglpat-[A-Za-z0-9_-]{20,}`,
    String.raw`\b(?:AKIA|ASIA|AIDA|AROA)[0-9A-Z]{16}\b`,
    String.raw`\bAIza[0-9A-Za-z_-]{35}`,
    String.raw`\bxox[abposr]-[A-Za-z0-9-]{10,}`,
    String.raw`\bhf_[A-Za-z0-9]{30,}`,
    String.raw`\bmg-v1-[0-9a-f]{64}\b`,
    String.raw`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`,
    String.raw`-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----`,
  ].join('|'),
)
const RANDOM_TOKEN = compile(String.raw`\b[A-Za-z0-9+/_=-]{32,}`)

/** Shannon entropy of `text`, in bits per character. */
export const entropyOf = (text: string): number => {
  const counts = new Map<string, number>()
  for (const character of text) counts.set(character, (counts.get(character) ?? 0) + 1)
  let bits = 0
  for (const count of counts.values()) {
    const share = count / text.length
    bits -= share * Math.log2(share)
  }
  return bits
}
// Random base62/base64 keys run near 5 bits per character; words, paths and hex digests (at most 4) stay below 4.3.
const looksRandom = (matched: string) =>
  /[a-z]/.test(matched) && /[A-Z]/.test(matched) && /[0-9]/.test(matched) && !/^[A-Za-z]+(?:[/_-][A-Za-z]+)*$/.test(matched) && entropyOf(matched) >= 4.3

// `person-name`: a title or an introduction followed by capitalised words.
const NAME_WORD = String.raw`[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?`
const PERSON_NAME = compile(
  [
    String.raw`\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame)\.? ${NAME_WORD}(?: ${NAME_WORD}){0,2}`,
    String.raw`(?:\b[Mm]y [Nn]ame [Ii]s|\b[Ii] am called|\b[Nn]ame:|\b[Ss]igned,?|\b[Rr]egards,|\b[Ss]incerely,) ?\n?${NAME_WORD}(?: ${NAME_WORD}){0,2}`,
  ].join('|'),
)
const NAME_INTRODUCTION = /^(?:(?:my name is|i am called|name:|signed,?|regards,|sincerely,) ?\n?)/i
// Only the name is personal data: redact it, not the words that introduced it.
const nameSpans: Detector = (text) =>
  findAll(PERSON_NAME, text).map((span) => {
    const introduction = NAME_INTRODUCTION.exec(text.slice(span.start, span.end))
    return introduction ? { start: span.start + introduction[0].length, end: span.end } : span
  })

// `address`: a house number and a street with a common street suffix, or a post office box.
const STREET_SUFFIX =
  'Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Ter|Parkway|Pkwy|Circle|Cir|Highway|Hwy|Square|Sq|Trail|Trl|Crescent|Close'
const ADDRESS = compile(
  [
    String.raw`\b[0-9]{1,6}[A-Za-z]? (?:[A-Z][A-Za-z.'-]* ){1,4}(?:${STREET_SUFFIX})\b\.?(?:,? (?:Apt|Suite|Ste|Unit|#) ?[0-9A-Za-z-]+)?`,
    String.raw`\b[Pp]\.? ?[Oo]\.? [Bb][Oo][Xx] [0-9]+`,
  ].join('|'),
)

// `regex-prompt-injection`: the phrasings of well-known instruction-override attacks.
const PROMPT_INJECTION = compile(
  [
    String.raw`\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+|the\s+|your\s+|these\s+|those\s+)*(?:previous|prior|above|earlier|preceding|initial|original|system)\s+(?:instructions?|prompts?|rules|directions|guidelines|messages?|context)`,
    String.raw`\b(?:reveal|show|print|repeat|output|leak|display)\s+(?:me\s+)?(?:your|the)\s+(?:system|hidden|initial|original|secret)\s+(?:prompt|instructions|message)`,
    String.raw`\byou\s+are\s+(?:now\s+)?(?:in\s+)?(?:DAN|developer\s+mode|jailbroken|unrestricted|an?\s+unfiltered)`,
    String.raw`\bdo\s+anything\s+now\b`,
    String.raw`\b(?:pretend|act\s+as\s+if)\s+(?:that\s+)?you\s+(?:have\s+no|are\s+not\s+bound\s+by|are\s+free\s+from)\s+(?:restrictions|rules|guidelines|filters|limits)`,
    String.raw`\bnew\s+(?:system\s+)?instructions\s*:`,
    String.raw`<\|?im_start\|?>\s*system|<\|system\|>|\[/?INST\]|<<SYS>>`,
  ].join('|'),
  'i',
)

/** What each builtin finds in a text. */
export const BUILTIN_DETECTORS: Record<ContentFilterBuiltinSlug, Detector> = {
  email: matching(EMAIL),
  phone: anyOf(matching(PHONE_INTERNATIONAL, isPhoneLength), matching(PHONE_NANP)),
  ssn: matching(SSN, isIssuableSsn),
  'credit-card': matching(CARD, isCardNumber),
  'ip-address': anyOf(matching(IPV4), matching(IPV6_CANDIDATE, isIpv6)),
  secrets: anyOf(matching(KNOWN_SECRETS), matching(RANDOM_TOKEN, looksRandom)),
  'person-name': nameSpans,
  address: matching(ADDRESS),
  'regex-prompt-injection': matching(PROMPT_INJECTION),
}

/** The replacement a redacting builtin writes when its entry has no label. */
export const BUILTIN_REDACTION_LABELS: Record<ContentFilterBuiltinSlug, string> = {
  email: '[EMAIL]',
  phone: '[PHONE]',
  ssn: '[SSN]',
  'credit-card': '[CREDIT_CARD]',
  'ip-address': '[IP_ADDRESS]',
  secrets: '[SECRET]',
  'person-name': '[PERSON_NAME]',
  address: '[ADDRESS]',
  'regex-prompt-injection': '[PROMPT_INJECTION]',
}
