/**
 * Every record type serialises concurrent updates: 30 PATCHes of one record at once all answer 200
 * and all land (the repositories retry a lost compare-and-set with back-off). BYOK runs on every
 * driver in the storage contract suite; this covers the other routes.
 */
import { describe, expect, it } from 'vitest'
import { API_KEYS } from '../../../src/repositories/api-keys'
import { INTERNS } from '../../../src/repositories/interns'
import { WORKSPACES } from '../../../src/repositories/workspaces'
import { createTestGateway, readJson } from '../../helpers/gateway'

const WRITERS = 30

describe('30 concurrent PATCHes of one record', () => {
  it.each([
    ['keys', API_KEYS, 'name'],
    ['workspaces', WORKSPACES, 'name'],
    ['interns', INTERNS, 'description'],
  ])('PATCH /%s/{id}: all 200, each applied once', async (route, collection, field) => {
    const t = await createTestGateway()
    let id: string
    if (route === 'keys') id = (await readJson(await t.call('POST', '/keys', { json: { name: 'contended' } }))).data.hash
    else if (route === 'workspaces') id = (await readJson(await t.call('POST', '/workspaces', { json: { name: 'Contended', slug: 'contended' } }))).data.id
    else {
      await t.gateway.admin.setAccountFlags(undefined, { interns: true })
      id = (await readJson(await t.call('POST', '/interns', { json: { name: 'contended' } }))).id
    }
    const before = (await t.gateway.storage.get(collection, id))!.version

    const responses = await Promise.all(
      Array.from({ length: WRITERS }, (_, index) => t.call('PATCH', `/${route}/${id}`, { json: { [field]: `writer ${index}` } })),
    )
    const bodies = await Promise.all(responses.map((response) => readJson(response)))
    expect(responses.map((response) => response.status)).toEqual(Array.from({ length: WRITERS }, () => 200))
    bodies.forEach((body, index) => expect((body.data ?? body)[field]).toBe(`writer ${index}`))
    expect((await t.gateway.storage.get(collection, id))!.version).toBe(before + WRITERS)
  })
})
