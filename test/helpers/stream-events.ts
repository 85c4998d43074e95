/**
 * Checks an item-level Responses event sequence the way client SDKs rely on it (gaps §2): every
 * delta's item and content part were opened before, nothing is opened twice, everything opened is
 * closed, `.done` texts equal the concatenated deltas, and `output_item.done` carries the full item.
 */

import { expect } from 'vitest'

type Event = { type: string } & Record<string, any>

export const collect = async <T>(iterable: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = []
  for await (const value of iterable) all.push(value)
  return all
}

/** Splits bytes into chunks of `size` (default 1 byte: every boundary is exercised). */
export async function* chunked(bytes: Uint8Array | string, size = 1): AsyncIterable<Uint8Array> {
  const data = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes
  for (let offset = 0; offset < data.length; offset += size) yield data.subarray(offset, offset + size)
}

export const assertValidEventSequence = (events: Event[]) => {
  const openItems = new Map<number, any>()
  const closedItems = new Set<number>()
  const openParts = new Map<string, { text: string }>()
  const openSummaries = new Map<string, { text: string }>()
  const args = new Map<number, string>()
  const partKey = (event: Event) => `${event.output_index}:${event.content_index}`
  const summaryKey = (event: Event) => `${event.output_index}:${event.summary_index}`

  for (const [position, event] of events.entries()) {
    const where = `event ${position} (${event.type})`
    expect(event, where).not.toHaveProperty('error')
    switch (event.type) {
      case 'response.output_item.added':
        expect(openItems.has(event.output_index) || closedItems.has(event.output_index), `${where}: item reopened`).toBe(false)
        expect(event.item?.id, where).toBeTypeOf('string')
        openItems.set(event.output_index, event.item)
        if (event.item.type === 'function_call') args.set(event.output_index, event.item.arguments ?? '')
        break
      case 'response.content_part.added':
        expect(openItems.has(event.output_index), `${where}: item not open`).toBe(true)
        expect(openParts.has(partKey(event)), `${where}: part reopened`).toBe(false)
        openParts.set(partKey(event), { text: '' })
        break
      case 'response.output_text.delta':
      case 'response.refusal.delta':
      case 'response.reasoning_text.delta':
        expect(openParts.has(partKey(event)), `${where}: part not open`).toBe(true)
        expect(event.delta, where).toBeTypeOf('string')
        if (event.type === 'response.output_text.delta') expect(event.logprobs, where).toEqual([])
        openParts.get(partKey(event))!.text += event.delta
        break
      case 'response.output_text.done':
      case 'response.reasoning_text.done':
        expect(openParts.get(partKey(event))?.text, `${where}: done text differs from deltas`).toBe(event.text)
        break
      case 'response.refusal.done':
        expect(openParts.get(partKey(event))?.text, where).toBe(event.refusal)
        break
      case 'response.content_part.done':
        expect(openParts.has(partKey(event)), `${where}: part not open`).toBe(true)
        openParts.delete(partKey(event))
        break
      case 'response.reasoning_summary_part.added':
        expect(openItems.has(event.output_index), `${where}: item not open`).toBe(true)
        openSummaries.set(summaryKey(event), { text: '' })
        break
      case 'response.reasoning_summary_text.delta':
        expect(openSummaries.has(summaryKey(event)), `${where}: summary not open`).toBe(true)
        openSummaries.get(summaryKey(event))!.text += event.delta
        break
      case 'response.reasoning_summary_text.done':
        expect(openSummaries.get(summaryKey(event))?.text, where).toBe(event.text)
        break
      case 'response.reasoning_summary_part.done':
        expect(openSummaries.has(summaryKey(event)), where).toBe(true)
        openSummaries.delete(summaryKey(event))
        break
      case 'response.function_call_arguments.delta':
        expect(args.has(event.output_index), `${where}: call not open`).toBe(true)
        args.set(event.output_index, args.get(event.output_index)! + event.delta)
        break
      case 'response.function_call_arguments.done':
        expect(args.get(event.output_index), where).toBe(event.arguments)
        break
      case 'response.output_item.done': {
        expect(openItems.has(event.output_index), `${where}: item not open`).toBe(true)
        const openPartsOfItem = [...openParts.keys(), ...openSummaries.keys()].filter((key) => key.startsWith(`${event.output_index}:`))
        expect(openPartsOfItem, `${where}: parts still open`).toEqual([])
        expect(event.item.status, where).not.toBe('in_progress')
        openItems.delete(event.output_index)
        closedItems.add(event.output_index)
        break
      }
      default:
        break
    }
  }
  expect([...openItems.keys()], 'items left open').toEqual([])
  const indexes = [...closedItems].sort((left, right) => left - right)
  expect(indexes, 'output indexes are 0..n-1').toEqual(indexes.map((_, index) => index))
}
