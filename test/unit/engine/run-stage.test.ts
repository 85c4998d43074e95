/**
 * Request stages (src/engine/run-stage.ts): composed outermost first around the engine's own run, each seeing the
 * request and the rest of the run; a stage may act before it, answer without it, or change what it answered.
 */

import { describe, expect, it } from 'vitest'
import type { InferenceRequest } from '../../../src/engine/request'
import { composeRunStages, type RunNext, type RunOutcome, type RunStage } from '../../../src/engine/run-stage'
import type { WholeAnswer } from '../../../src/engine/session-events'

const request = { requestId: 'req_1' } as unknown as InferenceRequest
const answer = (text: string): RunOutcome => ({ isStream: false, answer: { result: { id: text } } as unknown as WholeAnswer })
const idOf = (outcome: RunOutcome) => (outcome.isStream ? 'stream' : outcome.answer.result.id)

/** A stage that logs on the way in and out. */
const tracing = (name: string, log: string[]): RunStage => ({
  name,
  async run(request, next) {
    log.push(`${name} in`)
    const outcome = await next(request)
    log.push(`${name} out`)
    return outcome
  },
})

describe('request stages', () => {
  it('run outermost first around the core, and unwind in reverse', async () => {
    const log: string[] = []
    const core: RunNext = async () => {
      log.push('core')
      return answer('core')
    }
    const run = composeRunStages([tracing('a', log), tracing('b', log)], core)
    expect(idOf(await run(request))).toBe('core')
    expect(log).toEqual(['a in', 'b in', 'core', 'b out', 'a out'])
  })

  it('let a stage answer without the rest, or change what the rest answered', async () => {
    const calls: string[] = []
    const core: RunNext = async () => {
      calls.push('core')
      return answer('core')
    }
    const answersItself: RunStage = { name: 'itself', run: async () => answer('itself') }
    const rewrites: RunStage = { name: 'rewrites', run: async (request, next) => answer(`${idOf(await next(request))}+rewritten`) }
    expect(idOf(await composeRunStages([rewrites, answersItself], core)(request))).toBe('itself+rewritten')
    expect(calls).toEqual([])
    expect(idOf(await composeRunStages([rewrites], core)(request))).toBe('core+rewritten')
  })

  it('hand on the request a stage gives, and pass a refusal out through the stages before it', async () => {
    const seen: string[] = []
    const core: RunNext = async (request) => {
      seen.push(request.requestId)
      throw new Error('refused')
    }
    const renames: RunStage = { name: 'renames', run: (request, next) => next({ ...request, requestId: 'req_2' }) }
    const failures: unknown[] = []
    const catches: RunStage = {
      name: 'catches',
      async run(request, next) {
        try {
          return await next(request)
        } catch (error) {
          failures.push(error)
          throw error
        }
      },
    }
    await expect(composeRunStages([catches, renames], core)(request)).rejects.toThrow('refused')
    expect(seen).toEqual(['req_2'])
    expect(failures).toHaveLength(1)
  })

  it('is the core itself without stages', () => {
    const core: RunNext = async () => answer('core')
    expect(composeRunStages([], core)).toBe(core)
  })
})
