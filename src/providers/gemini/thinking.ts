/**
 * `reasoning` → Gemini `thinkingConfig`. Two generations of controls exist
 * (https://ai.google.dev/gemini-api/docs/thinking):
 *
 * - Gemini 2.x (budget models): `thinkingBudget` tokens. `0` turns thinking off (not on 2.5 Pro,
 *   whose minimum is 128), `-1` lets the model decide.
 *     effort none → 0 (128 on Pro) · minimal → 512 · low → 2048 · medium → 8192 ·
 *     high → 24576 · xhigh / max → the model's ceiling (32768 on Pro, 24576 otherwise).
 *     `max_tokens` wins over `effort` and is sent as the budget as is.
 * - Gemini 3 and later (level models): `thinkingLevel`. Thinking cannot be turned off; none and
 *   minimal ask for the lowest level the model accepts (`minimal` on Flash before 3.7, `low`
 *   otherwise, since Pro and newer Flash answer 400 to MINIMAL).
 *     low → low · medium → medium · high / xhigh / max → high.
 *     Without an effort, `max_tokens` is sent as `thinkingBudget` (still accepted by Gemini 3).
 *
 * `includeThoughts: true` (thought summaries, our reasoning summaries) whenever thinking is not
 * turned off. No `reasoning` object, or one with nothing set, leaves the model's default alone,
 * and so does any `reasoning` sent to a non-Gemini model (Gemma) on this API.
 */

import type { ResponsesRequest } from '../types'
import type { GeminiThinkingConfig } from './wire'

// Unknown and future Gemini ids (aliases like `gemini-flash-latest` included) get the newest controls.
const GEMINI_MODEL = /(^|\/)gemini-/i
const BUDGET_MODEL = /(^|\/)gemini-(1|2)([.-]|$)|(^|\/)gemini-pro(-vision)?$/i
const PRO_MODEL = /-pro([.-]|$)/i
const FLASH_VERSION = /gemini-(\d+)(?:\.(\d+))?-flash/i

const BUDGETS: Record<string, number> = { minimal: 512, low: 2048, medium: 8192, high: 24576 }
const LEVELS: Record<string, GeminiThinkingConfig['thinkingLevel']> = { low: 'low', medium: 'medium', high: 'high', xhigh: 'high', max: 'high' }

export const isGeminiModel = (model: string): boolean => GEMINI_MODEL.test(model)

/** Gemini 3 and later (and unknown Gemini ids): `thinkingLevel`, mandatory thought signatures. */
export const usesThinkingLevels = (model: string): boolean => !BUDGET_MODEL.test(model)

const lowestLevel = (model: string): 'minimal' | 'low' => {
  const flash = FLASH_VERSION.exec(model)
  if (!flash) return 'low'
  const major = Number(flash[1])
  const minor = Number(flash[2] ?? 0)
  return major < 3 || (major === 3 && minor < 7) ? 'minimal' : 'low'
}

export const thinkingConfig = (reasoning: ResponsesRequest['reasoning'], model: string): GeminiThinkingConfig | undefined => {
  // Gemma and other non-Gemini models on this API have no thinking controls.
  if (!reasoning || !GEMINI_MODEL.test(model)) return undefined
  const effort = reasoning.effort ?? undefined
  const budget = reasoning.max_tokens ?? undefined
  const isOff = reasoning.enabled === false || effort === 'none'
  const isOn = reasoning.enabled === true || (effort !== undefined && !isOff) || budget !== undefined || (reasoning.summary ?? null) !== null
  if (!isOff && !isOn) return undefined

  if (usesThinkingLevels(model)) {
    if (isOff) return { thinkingLevel: lowestLevel(model) }
    if (effort === 'minimal') return { thinkingLevel: lowestLevel(model), includeThoughts: true }
    const level = effort ? LEVELS[effort] : undefined
    if (level) return { thinkingLevel: level, includeThoughts: true }
    if (budget !== undefined) return { thinkingBudget: budget, includeThoughts: true }
    return { includeThoughts: true }
  }

  const isPro = PRO_MODEL.test(model)
  if (isOff) return { thinkingBudget: isPro ? 128 : 0 }
  if (budget !== undefined) return { thinkingBudget: budget, includeThoughts: true }
  if (effort === 'xhigh' || effort === 'max') return { thinkingBudget: isPro ? 32768 : 24576, includeThoughts: true }
  const fixed = effort ? BUDGETS[effort] : undefined
  return { thinkingBudget: fixed ?? -1, includeThoughts: true }
}
