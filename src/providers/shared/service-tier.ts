/**
 * The processing tier an answer reports, in OpenAI's names, which are the canonical (Responses) ones. OpenAI's
 * Responses and Chat Completions answers say which tier served them; OpenAI-compatible hosts may answer with words
 * of their own (Groq's `on_demand`), which mean nothing to a client reading OpenAI's names, so they are dropped.
 */

const OPENAI_SERVICE_TIERS: ReadonlySet<unknown> = new Set(['default', 'flex', 'scale', 'priority'])

/** The tier an OpenAI-shaped answer says it used, or undefined (none, `auto`, or another vocabulary's word). */
export const openAIServiceTier = (value: unknown): string | undefined => (OPENAI_SERVICE_TIERS.has(value) ? (value as string) : undefined)

/** `{ serviceTier }` when the answer named one, for spreading into a result or a finish event. */
export const servedTier = (tier: string | undefined): { serviceTier?: string } => (tier === undefined ? {} : { serviceTier: tier })
