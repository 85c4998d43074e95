/** The two built-in upstream transports, for tests that must hold on both. */

import { afterAll, beforeAll } from 'vitest'
import { undiciTransport, type UndiciTransport } from '../../src/transport/undici'

/** For `describe.each`: `undefined` leaves the gateway on its default transport, the runtime's fetch. */
export const TRANSPORTS: Array<[name: 'fetch' | 'undici', make: () => UndiciTransport | undefined]> = [
  ['fetch', () => undefined],
  ['undici', () => undiciTransport()],
]

/** Makes the transport before the suite and closes it after; `options()` is what to spread into gateway options. */
export const useTransport = (make: () => UndiciTransport | undefined) => {
  let transport: UndiciTransport | undefined
  beforeAll(() => {
    transport = make()
  })
  afterAll(async () => {
    await transport?.close()
  })
  return { options: (): { transport?: UndiciTransport } => (transport ? { transport } : {}) }
}
