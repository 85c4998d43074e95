/** The routers' pure parts: wildcard patterns, the task classifier's order of rules, ranking ties and the score table. */

import { describe, expect, it } from 'vitest'
import { BUILT_IN_MODELS } from '../../../src/engine/models'
import { rankForTask } from '../../../src/features/plugins/routers/auto-ranking'
import type { Candidate } from '../../../src/features/plugins/routers/candidates'
import { BUILT_IN_CODING_SCORES, codingScores } from '../../../src/features/plugins/routers/coding-scores'
import { createModelFilter, matchesPattern } from '../../../src/features/plugins/routers/patterns'
import { createStickyChoices } from '../../../src/features/plugins/routers/sticky'
import { classifyTask } from '../../../src/features/plugins/routers/task'
import type { ResponsesRequestBody } from '../../../src/engine/request.schemas'

const body = (fields: Record<string, unknown>) => ({ stream: false, store: false, service_tier: 'auto', ...fields }) as ResponsesRequestBody

describe('model patterns', () => {
  it.each([
    ['anthropic/claude-sonnet-4.5', 'anthropic/*', true],
    ['anthropic/claude-sonnet-4.5', '*/claude-*-4.5', true],
    ['anthropic/claude-sonnet-4.5', 'ANTHROPIC/CLAUDE-SONNET-4.5', true],
    ['anthropic/claude-sonnet-4.5', 'anthropic/claude', false],
    ['openai/gpt-5', 'openai/gpt-5*', true],
    ['openai/gpt-5', 'openai/gpt-5*-mini', false],
    ['a/ab', 'a/a*b*b', false],
    ['x/anything', '*', true],
  ])('%s against %s: %s', (slug, pattern, expected) => {
    expect(matchesPattern(slug, pattern)).toBe(expected)
  })

  it('lets exclusion win over an allow-list', () => {
    const isAllowed = createModelFilter(['openai/*'], ['*-mini'])
    expect(['openai/gpt-5', 'openai/gpt-5-mini', 'google/gemini'].filter(isAllowed)).toEqual(['openai/gpt-5'])
    expect(createModelFilter(undefined, undefined)('any/model')).toBe(true)
  })
})

describe('task classifier', () => {
  it('applies its rules in order: images before code before math', () => {
    const image = { type: 'input_image', image_url: 'data:image/png;base64,AA==' }
    expect(classifyTask(body({ input: [{ role: 'user', content: [{ type: 'input_text', text: '```py\nprint(1)\n```' }, image] }] })).taskType).toBe('vision')
    expect(classifyTask(body({ input: 'Prove this function terminates: ```def f(): return 1```' })).taskType).toBe('code')
    expect(classifyTask(body({ input: 'Prove that 2 + 2 = 4' })).taskType).toBe('math')
  })

  it.each([
    ['Let me know: are you free tomorrow?', 'chat'],
    ['What is the dress code for the wedding?', 'chat'],
    ['My class of 2010 reunion: ideas?', 'chat'],
    ['def parse(text):\n    return text', 'code'],
    ['const total = items.length', 'code'],
    ['import { useState } from "react"', 'code'],
    ['SELECT name FROM users WHERE id = 1', 'code'],
  ])('reads %j as %s', (input, taskType) => {
    expect(classifyTask(body({ input })).taskType).toBe(taskType)
  })

  it('reads the latest user message, not earlier turns', () => {
    const input = [
      { role: 'user', content: 'Write a python function' },
      { role: 'assistant', content: 'def f(): ...' },
      { role: 'user', content: 'Thanks! How are you?' },
    ]
    expect(classifyTask(body({ input })).taskType).toBe('chat')
  })

  it('reports the needs every candidate must meet', () => {
    const reading = classifyTask(body({ input: 'hi', tools: [{ type: 'function', name: 'f' }] }))
    expect(reading).toEqual({ taskType: 'tool_use', needs: { hasImages: false, hasTools: true, promptTokens: expect.any(Number) } })
  })
})

const candidate = (slug: string, blendedPrice: number, fields: Partial<Candidate> = {}): Candidate => ({
  slug,
  entry: { slug, name: slug, endpoints: [] },
  promptPrice: blendedPrice,
  blendedPrice,
  contextLength: 128_000,
  readsImages: false,
  takesTools: true,
  takesReasoning: false,
  ...fields,
})

describe('auto ranking', () => {
  // Eleven candidates at percentiles 0, 10, …, 100: two in each band, three in max.
  const candidates = Array.from({ length: 11 }, (_, index) => candidate(`m/${String(index).padStart(2, '0')}`, index + 1))

  it('prefers the better fit for the task inside the band, the cheaper otherwise', () => {
    const scores = { 'm/03': 0.9, 'm/02': 0.1 }
    expect(rankForTask(candidates, 'code', 'medium', scores).slice(0, 2).map((c) => c.slug)).toEqual(['m/03', 'm/02'])
    expect(rankForTask(candidates, 'chat', 'medium', scores).slice(0, 2).map((c) => c.slug)).toEqual(['m/02', 'm/03'])
    const reasoning = candidates.map((c) => (c.slug === 'm/03' ? { ...c, takesReasoning: true } : c))
    expect(rankForTask(reasoning, 'math', 'medium', {})[0]!.slug).toBe('m/03')
  })

  it('closes the max band at 100 and opens the others at the top', () => {
    // Percentiles 80, 90 and 100 are all max's; 100 belongs to no other band.
    expect(rankForTask(candidates, 'chat', 'max', {}).slice(0, 3).map((c) => c.slug)).toEqual(['m/08', 'm/09', 'm/10'])
    expect(rankForTask(candidates, 'chat', 'xhigh', {}).slice(0, 2).map((c) => c.slug)).toEqual(['m/06', 'm/07'])
    expect(rankForTask(candidates, 'chat', 'low', {})[0]!.slug).toBe('m/00')
  })
})

describe('coding score table', () => {
  it('scores only models of the built-in catalog, each between 0 and 1', () => {
    const slugs = new Set(BUILT_IN_MODELS.map((model) => model.slug))
    for (const [slug, score] of Object.entries(BUILT_IN_CODING_SCORES)) {
      expect(slugs.has(slug), slug).toBe(true)
      expect(score).toBeGreaterThanOrEqual(0)
      expect(score).toBeLessThanOrEqual(1)
    }
  })

  it('takes the operator’s scores over the built-in ones', () => {
    expect(codingScores({ 'openai/gpt-5': 0.5, 'my/model': 0.8 })).toMatchObject({ 'openai/gpt-5': 0.5, 'my/model': 0.8, 'openai/o3': BUILT_IN_CODING_SCORES['openai/o3'] })
  })
})

describe('sticky choices', () => {
  it('forgets the least recently used session past its capacity', () => {
    const sticky = createStickyChoices(2)
    sticky.set('a', ['x/1'])
    sticky.set('b', ['x/2'])
    sticky.get('a')
    sticky.set('c', ['x/3'])
    expect([sticky.get('a'), sticky.get('b'), sticky.get('c')]).toEqual([['x/1'], undefined, ['x/3']])
    expect(sticky.size).toBe(2)
    const none = createStickyChoices(0)
    none.set('a', ['x/1'])
    expect(none.get('a')).toBeUndefined()
  })
})
