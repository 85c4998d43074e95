/**
 * What the Vercel AI SDK end-to-end tests share, whichever provider package speaks to the gateway:
 * the prompts the fixtures answer, the `get_weather` tool, and a reader for a `streamText` run.
 */

import { jsonSchema, tool } from 'ai'
import { WEATHER_PARAMETERS } from './sdk-gateway'

export const QUESTION = 'What is the capital of France?'
export const WEATHER_QUESTION = 'What is the weather like in Paris right now?'

/** No `execute`: the SDK hands the model's call back to the app instead of running it. */
export const weatherTools = {
  get_weather: tool({
    description: 'Get the current weather for a location.',
    inputSchema: jsonSchema<{ location: string; unit: 'celsius' | 'fahrenheit' }>(WEATHER_PARAMETERS),
  }),
}

export type StreamPart = { type: string; error?: unknown }

/** Every part of a `streamText` run, read to the end. */
export const streamParts = async (result: { fullStream: AsyncIterable<{ type: string }> }) => {
  const parts: StreamPart[] = []
  for await (const part of result.fullStream) parts.push(part)
  return parts
}

export const errorParts = (parts: StreamPart[]) => parts.filter((part) => part.type === 'error').map((part) => String(part.error))
