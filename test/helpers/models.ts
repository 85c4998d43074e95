import type { ModelEntry } from '../../src/engine/models'

/** The list price of the tests' models: one cheaper endpoint first, so routing tries it first. */
export const TEST_PRICING = { prompt: 0.000001, completion: 0.000002 }

/** One model, `test/model`, on two providers: alpha (cheaper, tried first) and beta. */
export const TWO_PROVIDERS: ModelEntry[] = [
  {
    slug: 'test/model',
    name: 'Test model',
    endpoints: [
      { provider: 'alpha', model: 'alpha-model', contextLength: 8192, pricing: TEST_PRICING },
      { provider: 'beta', model: 'beta-model', contextLength: 8192, pricing: { prompt: 0.000002, completion: 0.000004 } },
    ],
  },
]
