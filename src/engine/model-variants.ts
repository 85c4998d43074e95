/**
 * Model variants: the `:suffix` of a model slug (docs/decisions.md, "Model variants"). `:nitro` and `:floor` choose
 * the model's endpoint order (throughput, price), `:free` only its free endpoints, `:thinking` only endpoints that
 * reason, with reasoning on; `:online` turns the web plugin on for the request. `:exacto` and any other suffix are
 * refused with a 400 naming it: a variant the gateway drops would route as if it had not been asked for.
 */

import { InvalidRequestError } from '../core/errors'
import type { ModelEntry } from './models'
import type { ResponsesRequestBody } from './request.schemas'

export type RoutingVariant = 'free' | 'nitro' | 'floor' | 'thinking'

const ROUTING_VARIANTS: readonly string[] = ['free', 'nitro', 'floor', 'thinking'] satisfies RoutingVariant[]
const KNOWN = ['free', 'nitro', 'floor', 'thinking', 'online']

/** The suffix of `slug` after the last `:` of its name, if any. */
export const variantOf = (slug: string): string | undefined => {
  const name = slug.slice(slug.indexOf('/') + 1)
  const colon = name.lastIndexOf(':')
  return colon < 0 ? undefined : name.slice(colon + 1)
}

const withoutVariant = (slug: string) => slug.slice(0, slug.lastIndexOf(':'))

const unknownVariant = (slug: string, variant: string) =>
  new InvalidRequestError(
    variant === 'exacto'
      ? `model "${slug}": the variant ":exacto" is not supported: the gateway has no tool-calling quality figures to route on`
      : `model "${slug}": unknown variant ":${variant}" (supported: ${KNOWN.map((known) => `:${known}`).join(', ')})`,
  )

/**
 * The routing variant of `slug` as the catalog resolved it to `model`: none when the catalog has an entry of the
 * whole slug (an operator's own `…:free` model is that model). Throws the 400 for a variant routing cannot act on,
 * `:online` included (the request's preparation acts on it and takes it off; elsewhere, such as embeddings, it has
 * no effect to give).
 */
export const routingVariantOf = (slug: string, model: ModelEntry): RoutingVariant | undefined => {
  if (model.slug === slug) return undefined
  const variant = variantOf(slug)
  if (variant === undefined) return undefined
  if (variant === 'online') throw new InvalidRequestError(`model "${slug}": the variant ":online" (the web plugin) applies to generations only`)
  if (!ROUTING_VARIANTS.includes(variant)) throw unknownVariant(slug, variant)
  return variant as RoutingVariant
}

/** The reasoning `:thinking` turns on when the request sets none. */
const THINKING_REASONING = { effort: 'medium' } as const

/**
 * The request as its models' variants shape it: `:online` on any requested model turns the web plugin on (unless the
 * request configures it already) and leaves the slug; `:thinking` turns reasoning on when the request sets none (its
 * endpoints are filtered at routing). Variants apply to the whole request, wherever in `model` and `models` they are.
 */
export const applyRequestVariants = (body: ResponsesRequestBody): ResponsesRequestBody => {
  const slugs = [body.model, ...(body.models ?? [])].filter((slug): slug is string => typeof slug === 'string')
  const variants = new Set(slugs.map(variantOf))
  if (!variants.has('online') && !variants.has('thinking')) return body
  const strip = (slug: string) => (variantOf(slug) === 'online' ? withoutVariant(slug) : slug)
  let next: ResponsesRequestBody = {
    ...body,
    ...(typeof body.model === 'string' ? { model: strip(body.model) } : {}),
    ...(body.models ? { models: body.models.map(strip) } : {}),
  }
  if (variants.has('online') && !body.plugins?.some((plugin) => plugin.id === 'web')) next = { ...next, plugins: [...(body.plugins ?? []), { id: 'web' }] }
  if (variants.has('thinking') && !body.reasoning) next = { ...next, reasoning: { ...THINKING_REASONING } }
  return next
}
