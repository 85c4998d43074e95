/**
 * The fusion presets' panels, from the built-in catalog (docs/decisions.md, "Plugins: routers and fusion"): each
 * provider family's current top model (general-high), their small fast models (general-budget), and models that
 * answer without a reasoning phase (general-fast). Members the gateway cannot reach (no key) are left out; with
 * `service/fusion` and no judge named, the first reachable one judges.
 */

import type { FusionPreset } from './schemas'

export const FUSION_PRESETS: Readonly<Record<FusionPreset, readonly string[]>> = {
  'general-high': ['anthropic/claude-opus-4.8', 'openai/gpt-5.5', 'google/gemini-3.1-pro-preview'],
  'general-budget': ['anthropic/claude-haiku-4.5', 'openai/gpt-5-mini', 'google/gemini-3-flash-preview'],
  'general-fast': ['openai/gpt-4.1-mini', 'google/gemini-2.5-flash-lite', 'meta-llama/llama-3.3-70b-instruct'],
}

export const DEFAULT_FUSION_PRESET: FusionPreset = 'general-high'
