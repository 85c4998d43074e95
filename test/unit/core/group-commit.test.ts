import { describe, expect, it, vi } from 'vitest'
import { renderError } from '../../../src/core/errors'
import { createGroupCommit } from '../../../src/core/group-commit'
import { gate } from '../../../src/testing'

const OPTIONS = { maxBatch: 3, maxQueue: 5, maxInFlight: 1, overloadedMessage: 'Too many records waiting' }

/** A writer whose writes wait for the test to let them finish, one gate per write. */
const heldWriter = () => {
  const batches: number[][] = []
  const gates: Array<ReturnType<typeof gate>> = []
  const write = async (batch: number[]) => {
    batches.push(batch)
    const released = gate()
    gates.push(released)
    await released
  }
  return { write, batches, release: (index: number) => gates[index]!.open() }
}

describe('createGroupCommit', () => {
  it('sends items added together as one write, and those added while it runs as the next', async () => {
    const writer = heldWriter()
    const commit = createGroupCommit(writer.write, OPTIONS)
    const first = [commit.add(1), commit.add(2)]
    await Promise.resolve()
    expect(writer.batches).toEqual([[1, 2]])
    const waiting = [commit.add(3), commit.add(4), commit.add(5), commit.add(6)]
    writer.release(0)
    await Promise.all(first)
    await Promise.resolve()
    // At most maxBatch per write: the fourth waits for the one after.
    expect(writer.batches).toEqual([[1, 2], [3, 4, 5]])
    writer.release(1)
    await Promise.all(waiting.slice(0, 3))
    expect(writer.batches).toEqual([[1, 2], [3, 4, 5], [6]])
    writer.release(2)
    await waiting[3]
    await commit.drain()
  })

  it("rejects every item of a failed write with the writer's error, and goes on with the next", async () => {
    let calls = 0
    const commit = createGroupCommit(async () => {
      calls++
      if (calls === 1) throw new Error('store down')
    }, OPTIONS)
    const failed = [commit.add(1), commit.add(2)]
    for (const item of failed) await expect(item).rejects.toThrow('store down')
    await expect(commit.add(3)).resolves.toBeUndefined()
  })

  it('answers 503 at once when the queue is full, rather than holding items without bound', async () => {
    const writer = heldWriter()
    const commit = createGroupCommit(writer.write, OPTIONS)
    const accepted = [commit.add(0)]
    await Promise.resolve()
    for (let item = 1; item <= 5; item++) accepted.push(commit.add(item))
    const error = await commit.add(6).catch((rejection: unknown) => rejection)
    expect(await renderError(error, 'standard').json()).toEqual({ error: { code: 503, message: 'Too many records waiting' } })
    writer.release(0)
    await vi.waitFor(() => expect(writer.batches).toHaveLength(2))
    writer.release(1)
    await vi.waitFor(() => expect(writer.batches).toHaveLength(3))
    writer.release(2)
    await Promise.all(accepted)
    expect(writer.batches).toEqual([[0], [1, 2, 3], [4, 5]])
    await commit.drain()
  })
})
