/** The opening that names a conversation without a session (src/engine/conversation-key.ts). */

import { describe, expect, it } from 'vitest'
import { conversationKey, conversationOpening, OPENING_CHARACTERS } from '../../../src/engine/conversation-key'

const CALLER = { workspaceId: 'workspace-1', keyHash: 'hash-1', endUserId: 'mg_end_user' }
const system = { role: 'system', content: 'Be brief.' }
const firstQuestion = { role: 'user', content: [{ type: 'input_text', text: 'What is 2 + 2?' }] }

describe('conversation opening', () => {
  it('is the instructions and the input up to its first user message, so later turns keep it', async () => {
    const first = { instructions: 'Answer in French.', input: [system, firstQuestion] }
    const later = { ...first, input: [system, firstQuestion, { role: 'assistant', content: 'Quatre.' }, { role: 'user', content: 'And 3 + 3?' }] }
    expect(conversationOpening(later)).toBe(conversationOpening(first))
    expect(await conversationKey(CALLER, ['test/model'], later)).toBe(await conversationKey(CALLER, ['test/model'], first))
    // Another first question, other instructions, another caller or other models: another conversation.
    const other = await conversationKey(CALLER, ['test/model'], { ...first, input: [system, { role: 'user', content: 'What is 3 + 3?' }] })
    expect(other).not.toBe(await conversationKey(CALLER, ['test/model'], first))
    expect(await conversationKey(CALLER, ['test/model'], { ...first, instructions: 'Answer in German.' })).not.toBe(await conversationKey(CALLER, ['test/model'], first))
    expect(await conversationKey({ ...CALLER, endUserId: 'mg_other' }, ['test/model'], first)).not.toBe(await conversationKey(CALLER, ['test/model'], first))
    expect(await conversationKey(CALLER, ['test/model', 'test/other'], first)).not.toBe(await conversationKey(CALLER, ['test/model'], first))
  })

  it('reads a string input as the first user message', () => {
    expect(conversationOpening({ input: 'Hello' })).not.toBe(conversationOpening({ input: 'Hello there' }))
  })

  it(`reads at most ${OPENING_CHARACTERS} characters, however long the prompt`, () => {
    const long = 'x'.repeat(1_000_000)
    const opening = conversationOpening({ instructions: long, input: [{ role: 'user', content: 'first' }] })
    expect(opening.length).toBeLessThanOrEqual(OPENING_CHARACTERS + 1)
    // Openings that agree that far are one conversation, as the provider's prompt cache sees them.
    expect(conversationOpening({ instructions: long, input: [{ role: 'user', content: 'second' }] })).toBe(opening)
    const manyParts = conversationOpening({ input: [{ role: 'user', content: Array.from({ length: 100_000 }, (_, index) => ({ type: 'input_text', text: `part ${index}` })) }] })
    expect(manyParts.length).toBeLessThanOrEqual(OPENING_CHARACTERS + 16)
  })
})
