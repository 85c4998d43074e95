/** Reading a streamed `/responses` answer back into its events, for assertions. */

/** One server-sent Responses event (`response.output_text.delta`, `response.completed`, …). */
export type ResponseEvent = { type: string; sequence_number: number } & Record<string, any>

/**
 * Reads a whole event-stream response and returns its events in order, without keep-alive comments and the final `[DONE]`.
 * @example
 * const events = await readEvents(await testGateway.responses({ input: 'Hi', stream: true }))
 * expect(events.at(-1)?.type).toBe('response.completed')
 */
export const readEvents = async (response: Response): Promise<ResponseEvent[]> => {
  const type = response.headers.get('content-type') ?? ''
  if (!type.startsWith('text/event-stream')) throw new TypeError(`modelgate/testing: expected an event stream, got ${response.status} ${type}: ${await response.text()}`)
  const events: ResponseEvent[] = []
  for (const block of (await response.text()).split('\n\n')) {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6))
      .join('\n')
    if (data !== '' && data !== '[DONE]') events.push(JSON.parse(data) as ResponseEvent)
  }
  return events
}
