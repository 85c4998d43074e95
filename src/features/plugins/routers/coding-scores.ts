/**
 * Coding scores the pareto-router ranks by (docs/decisions.md, "Plugins: routers and fusion"), for models of the
 * built-in catalog only, each 0–1.
 *
 * Source: the Aider polyglot benchmark leaderboard, https://aider.chat/docs/leaderboards/ (225 Exercism exercises in
 * C++, Go, Java, JavaScript, Python and Rust; the score is `pass_rate_2`, the share solved within two tries, / 100).
 * Data file `aider/website/_data/polyglot_leaderboard.yml` of github.com/Aider-AI/aider, as last changed on
 * 2025-10-04 (commit cb6a152e5ee27fbc77ac499d5e628ccd74a5fa2a). The run date and the variant that was measured
 * follow each score; where several variants ran, the one a request gets by default is used when it was measured.
 *
 * A model without a published score has none here: the router never guesses one. Operators add or replace scores
 * with the gateway's `routers.codingScores` option (a newer leaderboard, their own evaluations).
 */

// Source: the Aider polyglot leaderboard (aider.chat/docs/leaderboards), data as of 2025-10-04.

export const BUILT_IN_CODING_SCORES: Readonly<Record<string, number>> = Object.freeze({
  'openai/gpt-5': 0.867, // 2025-08-25, reasoning effort medium (the default)
  'openai/o3-pro': 0.849, // 2025-06-28, high
  'google/gemini-2.5-pro': 0.791, // 2025-06-06, preview 06-05, default thinking
  'x-ai/grok-4': 0.796, // 2025-07-11, high
  'openai/o3': 0.769, // 2025-06-25, default effort
  'deepseek/deepseek-v3.2': 0.702, // 2025-10-03, V3.2-Exp chat
  'openai/o4-mini': 0.72, // 2025-04-16, high (the only run)
  'deepseek/deepseek-r1': 0.714, // 2025-06-06, R1 0528
  'anthropic/claude-opus-4': 0.707, // 2025-05-25, no thinking
  'qwen/qwen3-235b-a22b': 0.596, // 2025-05-09, no thinking
  'moonshotai/kimi-k2': 0.591, // 2025-07-17
  'anthropic/claude-sonnet-4': 0.564, // 2025-05-24, no thinking
  'google/gemini-2.5-flash': 0.551, // 2025-05-25, preview 05-20, 24k thinking budget
  'deepseek/deepseek-chat': 0.551, // 2025-03-24, V3 0324
  'openai/o3-mini': 0.538, // 2025-01-31, medium (the default)
  'x-ai/grok-3': 0.533, // 2025-04-10, Grok 3 Beta
  'openai/gpt-4.1': 0.524, // 2025-04-14
  'x-ai/grok-3-mini': 0.493, // 2025-04-10, high
  'openai/gpt-oss-120b': 0.418, // 2025-08-06, high
  'qwen/qwen3-32b': 0.4, // 2025-05-08
  'openai/gpt-4.1-mini': 0.324, // 2025-04-14
  'openai/gpt-4o': 0.231, // 2024-12-30, gpt-4o-2024-08-06 (the alias's target then)
  'meta-llama/llama-4-maverick': 0.156, // 2025-04-06
  'openai/gpt-4.1-nano': 0.089, // 2025-04-14
  'openai/gpt-4o-mini': 0.036, // 2024-12-21
})

/** The built-in scores with the operator's on top (a score of a model they name replaces the built-in one). */
export const codingScores = (overrides: Readonly<Record<string, number>> = {}): Readonly<Record<string, number>> =>
  Object.freeze({ ...BUILT_IN_CODING_SCORES, ...overrides })
