/** The telemetry channel: nothing built while nobody observes, every observer called, a failing one contained. */

import { describe, expect, it } from 'vitest'
import { createTelemetry, NO_TELEMETRY, type StoreCalled, type TelemetryObserver } from '../../../src/core/telemetry'

describe('the telemetry channel', () => {
  it('has no entry for an event nobody observes, so an emit never builds its event', () => {
    const telemetry = createTelemetry([{ storeCalled() {} }], () => {})
    expect(createTelemetry([], () => {})).toBe(NO_TELEMETRY)
    expect(Object.keys(telemetry)).toEqual(['storeCalled'])
    let built = 0
    const event = () => {
      built++
      return { requestId: 'r', stage: 's', isError: false, durationMs: 1 }
    }
    telemetry.stageEnded?.(event())
    expect(built).toBe(0)
  })

  it('hands each event to every observer of it, in order, with the observer as `this`', () => {
    const seen: string[] = []
    const first = {
      name: 'first',
      storeCalled(this: { name: string }, event: StoreCalled) {
        seen.push(`${this.name} ${event.operation}`)
      },
    }
    const second: TelemetryObserver = { storeCalled: (event) => seen.push(`second ${event.operation}`) }
    createTelemetry([first, second], () => {}).storeCalled?.({ operation: 'get', isError: false, durationMs: 0.2 })
    expect(seen).toEqual(['first get', 'second get'])
  })

  it('reports an observer that throws and still calls the others', () => {
    const failures: string[] = []
    const seen: number[] = []
    const telemetry = createTelemetry(
      [
        {
          streamsChanged() {
            throw new Error('broken observer')
          },
        },
        { streamsChanged: (event) => seen.push(event.active) },
      ],
      (error, event) => failures.push(`${event}: ${(error as Error).message}`),
    )
    expect(() => telemetry.streamsChanged?.({ active: 3 })).not.toThrow()
    expect(seen).toEqual([3])
    expect(failures).toEqual(['streamsChanged: broken observer'])
  })
})
