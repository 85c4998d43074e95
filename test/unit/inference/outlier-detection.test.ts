import { describe, expect, it } from 'vitest'
import { createOutlierDetector } from '../../../src/engine/outlier-detection'

const KEY = ['endpoint alpha']

const setUp = (options = { consecutiveFailures: 5, baseEjectionSeconds: 30, maxEjectionSeconds: 300 }) => {
  let time = 5_000_000
  const ejections: number[] = []
  const detector = createOutlierDetector(options, () => time, (_key, seconds) => ejections.push(seconds))
  const attempt = (keys: string[], outcome: 'answered' | 'failed' | 'unknown') => {
    detector.admit(keys)
    detector.record(keys, outcome)
  }
  const failTimes = (count: number, keys = KEY) => {
    for (let index = 0; index < count; index++) attempt(keys, 'failed')
  }
  return { detector, ejections, attempt, failTimes, advance: (seconds: number) => void (time += seconds * 1000) }
}

describe('outlier ejection', () => {
  it('ejects after 5 consecutive failures, for 30 s', () => {
    const { detector, failTimes, advance, ejections } = setUp()
    failTimes(4)
    expect(detector.isEjected(KEY)).toBe(false)
    failTimes(1)
    expect(detector.isEjected(KEY)).toBe(true)
    expect(ejections).toEqual([30])
    advance(29.9)
    expect(detector.isEjected(KEY)).toBe(true)
    advance(0.1)
    expect(detector.isEjected(KEY)).toBe(false)
  })

  it('counts only consecutive failures: an answer in between resets the count', () => {
    const { detector, failTimes, attempt } = setUp()
    failTimes(4)
    attempt(KEY, 'answered')
    failTimes(4)
    expect(detector.isEjected(KEY)).toBe(false)
  })

  it('lets one probe through when the ejection runs out; a failed probe ejects again for twice as long', () => {
    const { detector, failTimes, advance, ejections } = setUp()
    failTimes(5)
    advance(30)
    detector.admit(KEY)
    // The probe is in flight: every other attempt still skips the target.
    expect(detector.isEjected(KEY)).toBe(true)
    detector.record(KEY, 'failed')
    expect(ejections).toEqual([30, 60])
    advance(59)
    expect(detector.isEjected(KEY)).toBe(true)
    advance(1)
    expect(detector.isEjected(KEY)).toBe(false)
  })

  it('resets everything on a successful probe: the next ejection is 30 s again', () => {
    const { detector, failTimes, attempt, advance, ejections } = setUp()
    failTimes(5)
    advance(30)
    attempt(KEY, 'failed')
    advance(60)
    attempt(KEY, 'answered')
    expect(detector.isEjected(KEY)).toBe(false)
    failTimes(4)
    expect(detector.isEjected(KEY)).toBe(false)
    failTimes(1)
    expect(ejections).toEqual([30, 60, 30])
  })

  it('caps the back-off at the maximum', () => {
    const { failTimes, attempt, advance, ejections } = setUp()
    failTimes(5)
    for (let index = 0; index < 5; index++) {
      advance(300)
      attempt(KEY, 'failed')
    }
    expect(ejections).toEqual([30, 60, 120, 240, 300, 300])
  })

  it('frees the probe slot when the probe learnt nothing (the client left)', () => {
    const { detector, failTimes, advance } = setUp()
    failTimes(5)
    advance(30)
    detector.admit(KEY)
    detector.record(KEY, 'unknown')
    expect(detector.isEjected(KEY)).toBe(false)
  })

  it('does not extend an ejection with failures of attempts that still reach the target', () => {
    const { detector, failTimes, advance, ejections } = setUp()
    failTimes(5)
    failTimes(20)
    expect(ejections).toEqual([30])
    advance(30)
    expect(detector.isEjected(KEY)).toBe(false)
  })

  it('tracks each key on its own; an attempt is skipped when any of its keys is ejected', () => {
    const { detector, failTimes } = setUp()
    const byok = ['endpoint alpha', 'byok key-1']
    failTimes(5, ['byok key-1'])
    expect(detector.isEjected(byok)).toBe(true)
    expect(detector.isEjected(['endpoint alpha'])).toBe(false)
    expect(detector.isEjected(['endpoint alpha', 'byok key-2'])).toBe(false)
  })
})
