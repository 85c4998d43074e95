import { describe, expect, it } from 'vitest'
import { InvalidRequestError, isGatewayError } from '../../../src/core/errors'
import type { UpstreamCall, UpstreamResult, UpstreamStreamEvent } from '../../../src/providers/contract'
import { geminiAdapter } from '../../../src/providers/gemini'
import { UpstreamFailure } from '../../../src/core/upstream-failure'
import type { InputItem, OutputItem, ResponsesRequest } from '../../../src/providers/types'
import { assertValidEventSequence, chunked, collect } from '../../helpers/stream-events'
import { fixture } from '../../helpers/upstream'

const BASE_URL = 'https://generativelanguage.googleapis.com/v1beta'
const KEY = 'AIzaSyTEST-key-0123456789abcdefghijklm'
const target = { baseURL: BASE_URL, apiKey: KEY }

const call = (request: Partial<ResponsesRequest>, options: Partial<UpstreamCall> = {}): UpstreamCall => ({
  request: { model: 'google/gemini-2.5-flash', input: 'Hello', ...request },
  upstreamModel: 'gemini-2.5-flash',
  stream: false,
  ...options,
})

const body = (request: Partial<ResponsesRequest>, options: Partial<UpstreamCall> = {}) =>
  JSON.parse(geminiAdapter.buildRequest(call(request, options), target).body)

const json = (name: string) => JSON.parse(fixture('gemini', name).toString('utf8'))
const result = (name: string): UpstreamResult => geminiAdapter.readResult(json(name), call({}))

/** Stream events, loosely typed for assertions. */
type Event = { type: string } & Record<string, any>

const stream = async (name: string, size: number): Promise<Event[]> =>
  collect(geminiAdapter.readStream(chunked(fixture('gemini', name), size), call({}, { stream: true }))) as Promise<Event[]>

/** Items from `output_item.done`, in output order. */
const doneItems = (events: Event[]) =>
  events
    .filter((event) => event.type === 'response.output_item.done')
    .sort((left, right) => (left.output_index as number) - (right.output_index as number))
    .map((event) => event.item as OutputItem)

/** Item ids are random; everything else must match. */
const withoutIds = (items: OutputItem[]) => items.map(({ id, ...rest }) => ({ ...rest, id: typeof id }))

/** Runs a stream until it throws; returns the events yielded before and the error. */
const untilThrow = async (iterable: AsyncIterable<UpstreamStreamEvent>) => {
  const events: Event[] = []
  try {
    for await (const event of iterable) events.push(event)
  } catch (error) {
    return { events, error }
  }
  throw new Error('stream did not throw')
}

const expectInvalid = (request: Partial<ResponsesRequest>, message: string, options: Partial<UpstreamCall> = {}) => {
  let thrown: unknown
  try {
    geminiAdapter.buildRequest(call(request, options), target)
  } catch (error) {
    thrown = error
  }
  expect(thrown).toBeInstanceOf(InvalidRequestError)
  expect((thrown as Error).message).toBe(message)
}

describe('gemini buildRequest', () => {
  it('sends a string input as one user turn, with the key in x-goog-api-key', () => {
    const request = geminiAdapter.buildRequest(call({ input: 'Hello' }), target)
    expect(request).toEqual({
      url: `${BASE_URL}/models/gemini-2.5-flash:generateContent`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': KEY },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }),
    })
  })

  it('asks for SSE when streaming and adds configured headers', () => {
    const request = geminiAdapter.buildRequest(call({ stream: true }, { stream: true, upstreamModel: 'tunedModels/my-model' }), {
      ...target,
      baseURL: 'http://127.0.0.1:4010/v1beta/',
      headers: { 'x-goog-user-project': 'demo' },
    })
    expect(request.url).toBe('http://127.0.0.1:4010/v1beta/tunedModels/my-model:streamGenerateContent?alt=sse')
    expect(request.headers).toEqual({
      'x-goog-user-project': 'demo',
      'content-type': 'application/json',
      'x-goog-api-key': KEY,
      accept: 'text/event-stream',
    })
  })

  it('translates a multi-turn history with media, tool calls and a signed reasoning item', () => {
    const input: InputItem[] = [
      { type: 'message', role: 'system', content: 'Answer in English.' },
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is in these?' },
          { type: 'input_image', image_url: 'https://example.com/cat.PNG?size=large' },
          { type: 'input_image', image_url: 'data:image/webp;base64,UklGRg==' },
          { type: 'input_image', image_url: 'https://example.com/photo' },
          { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'report.pdf' },
          { type: 'input_file', file_data: 'aGVsbG8=', filename: 'notes.txt' },
          { type: 'input_file', file_url: 'https://example.com/data.csv' },
          { type: 'input_file', file_url: 'https://generativelanguage.googleapis.com/v1beta/files/abc123' },
        ],
      },
      { role: 'assistant', content: 'A cat and a report.' },
      { role: 'user', content: 'And the weather in Paris?' },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Need weather.' }], signature: 'c2lnLTE=', format: 'google-gemini-v1' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '' },
      { type: 'function_call_output', call_id: 'call_1', output: '{"temperature":18}' },
      { type: 'function_call_output', call_id: 'call_2', output: '10:42' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'It is 18°C at 10:42.', annotations: [] }] },
      { type: 'reasoning', id: 'rs_2', summary: [], signature: 'c2lnLTI=', format: 'google-gemini-v1' },
      { type: 'reasoning', id: 'rs_3', summary: [{ type: 'summary_text', text: 'Claude thinking' }], signature: 'anthropic', format: 'anthropic-claude-v1' },
      { type: 'message', role: 'user', content: 'Thanks!' },
    ]
    expect(body({ instructions: 'You are helpful.', input })).toEqual({
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'What is in these?' },
            { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/cat.PNG?size=large' } },
            { inlineData: { mimeType: 'image/webp', data: 'UklGRg==' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/photo' } },
            { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
            { inlineData: { mimeType: 'text/plain', data: 'aGVsbG8=' } },
            { fileData: { mimeType: 'text/csv', fileUri: 'https://example.com/data.csv' } },
            { fileData: { fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123' } },
          ],
        },
        { role: 'model', parts: [{ text: 'A cat and a report.' }] },
        { role: 'user', parts: [{ text: 'And the weather in Paris?' }] },
        {
          role: 'model',
          parts: [
            { functionCall: { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnLTE=' },
            { functionCall: { id: 'call_2', name: 'get_time', args: {} } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'call_1', name: 'get_weather', response: { temperature: 18 } } },
            { functionResponse: { id: 'call_2', name: 'get_time', response: { result: '10:42' } } },
          ],
        },
        { role: 'model', parts: [{ text: 'It is 18°C at 10:42.', thoughtSignature: 'c2lnLTI=' }] },
        { role: 'user', parts: [{ text: 'Thanks!' }] },
      ],
      systemInstruction: { parts: [{ text: 'You are helpful.' }, { text: 'Answer in English.' }, { text: 'Be brief.' }] },
    })
  })

  it('wraps function output that is not a JSON object, and sends tool media beside the response', () => {
    const input: InputItem[] = [
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
      { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{}' },
      { type: 'function_call', call_id: 'c3', name: 'h', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: '[1,2]' },
      { type: 'function_call_output', call_id: 'c2', output: '{not json' },
      {
        type: 'function_call_output',
        call_id: 'c3',
        output: [
          { type: 'input_text', text: 'chart:' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0=' },
        ],
      },
    ]
    expect(body({ input }).contents[1]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { id: 'c1', name: 'f', response: { result: '[1,2]' } } },
        { functionResponse: { id: 'c2', name: 'g', response: { result: '{not json' } } },
        { functionResponse: { id: 'c3', name: 'h', response: { result: 'chart:' } } },
        { inlineData: { mimeType: 'image/png', data: 'iVBORw0=' } },
      ],
    })
  })

  it('sends skip_thought_signature_validator on an unsigned first call of a step for Gemini 3 only', () => {
    const input: InputItem[] = [
      { role: 'user', content: 'Weather in Paris and Tokyo?' },
      { type: 'function_call', call_id: 'a', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'b', name: 'get_weather', arguments: '{"city":"Tokyo"}' },
      { type: 'function_call_output', call_id: 'a', output: 'sunny' },
      { type: 'function_call_output', call_id: 'b', output: 'rain' },
    ]
    const gemini3 = body({ input }, { upstreamModel: 'gemini-3-pro-preview' }).contents[1]
    expect(gemini3.parts[0].thoughtSignature).toBe('skip_thought_signature_validator')
    expect(gemini3.parts[1].thoughtSignature).toBeUndefined()
    const gemini25 = body({ input }, { upstreamModel: 'gemini-2.5-flash' }).contents[1]
    expect(gemini25.parts[0].thoughtSignature).toBeUndefined()
  })

  it('maps function tools to parametersJsonSchema and every tool_choice', () => {
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        description: 'Current weather',
        strict: true,
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
      },
      { type: 'function', name: 'get_time', parameters: null },
    ]
    const declarations = [
      {
        name: 'get_weather',
        description: 'Current weather',
        parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
      },
      { name: 'get_time' },
    ]
    expect(body({ tools })).toMatchObject({ tools: [{ functionDeclarations: declarations }] })
    expect(body({ tools }).toolConfig).toBeUndefined()
    expect(body({ tools, tool_choice: 'auto' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } })
    expect(body({ tools, tool_choice: 'none' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'NONE' } })
    expect(body({ tools, tool_choice: 'required' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } })
    expect(body({ tools, tool_choice: { type: 'function', name: 'get_time' } }).toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] },
    })
    expect(body({ tools, tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_weather' }] } }).toolConfig).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] },
    })
    const allowedAuto = body({ tools, tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_time' }] } })
    expect(allowedAuto.tools).toEqual([{ functionDeclarations: [{ name: 'get_time' }] }])
    expect(allowedAuto.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } })
    // Without tools, tool_choice has nothing to configure.
    expect(body({ tool_choice: 'required' }).toolConfig).toBeUndefined()
  })

  it('maps sampling settings, omits nulls and never sends the end-user id', () => {
    const sent = body(
      { temperature: 0.4, top_p: 0.9, top_k: 40, max_output_tokens: 512, presence_penalty: 0.5, frequency_penalty: 0.25, user: 'raw-user', safety_identifier: 'raw' },
      { endUserId: 'hash-of-user' },
    )
    expect(sent.generationConfig).toEqual({ temperature: 0.4, topP: 0.9, topK: 40, maxOutputTokens: 512, presencePenalty: 0.5, frequencyPenalty: 0.25 })
    expect(body({ temperature: null, top_p: null, max_output_tokens: null }).generationConfig).toBeUndefined()
    const text = JSON.stringify(sent)
    for (const secret of ['raw-user', 'hash-of-user', '"raw"']) expect(text).not.toContain(secret)
  })

  it('maps text.format to responseMimeType and responseJsonSchema', () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false }
    expect(body({ text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } } }).generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseJsonSchema: schema,
    })
    expect(body({ text: { format: { type: 'json_object' } } }).generationConfig).toEqual({ responseMimeType: 'application/json' })
    expect(body({ text: { format: { type: 'text' }, verbosity: 'low' } }).generationConfig).toBeUndefined()
  })

  it('maps reasoning to thinkingBudget on Gemini 2.x and thinkingLevel on Gemini 3', () => {
    const thinking = (reasoning: ResponsesRequest['reasoning'], upstreamModel: string) =>
      body({ reasoning }, { upstreamModel }).generationConfig?.thinkingConfig
    expect(thinking(undefined, 'gemini-2.5-flash')).toBeUndefined()
    expect(thinking({}, 'gemini-2.5-flash')).toBeUndefined()
    expect(thinking({ effort: 'none' }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: 0 })
    expect(thinking({ effort: 'none' }, 'gemini-2.5-pro')).toEqual({ thinkingBudget: 128 })
    expect(thinking({ enabled: false }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: 0 })
    expect(thinking({ effort: 'minimal' }, 'gemini-2.5-flash-lite')).toEqual({ thinkingBudget: 512, includeThoughts: true })
    expect(thinking({ effort: 'low' }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: 2048, includeThoughts: true })
    expect(thinking({ effort: 'medium', summary: 'auto' }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: 8192, includeThoughts: true })
    expect(thinking({ effort: 'high' }, 'gemini-2.5-pro')).toEqual({ thinkingBudget: 24576, includeThoughts: true })
    expect(thinking({ effort: 'xhigh' }, 'gemini-2.5-pro')).toEqual({ thinkingBudget: 32768, includeThoughts: true })
    expect(thinking({ effort: 'max' }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: 24576, includeThoughts: true })
    expect(thinking({ effort: 'low', max_tokens: 3000 }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: 3000, includeThoughts: true })
    expect(thinking({ enabled: true }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: -1, includeThoughts: true })
    expect(thinking({ summary: 'auto' }, 'gemini-2.5-flash')).toEqual({ thinkingBudget: -1, includeThoughts: true })

    expect(thinking({ effort: 'none' }, 'gemini-3-pro-preview')).toEqual({ thinkingLevel: 'low' })
    expect(thinking({ effort: 'none' }, 'gemini-3-flash-preview')).toEqual({ thinkingLevel: 'minimal' })
    expect(thinking({ effort: 'minimal' }, 'gemini-3.7-flash')).toEqual({ thinkingLevel: 'low', includeThoughts: true })
    expect(thinking({ effort: 'low' }, 'gemini-3-pro-preview')).toEqual({ thinkingLevel: 'low', includeThoughts: true })
    expect(thinking({ effort: 'medium' }, 'gemini-3-flash-preview')).toEqual({ thinkingLevel: 'medium', includeThoughts: true })
    expect(thinking({ effort: 'xhigh' }, 'gemini-3-pro-preview')).toEqual({ thinkingLevel: 'high', includeThoughts: true })
    expect(thinking({ max_tokens: 4096 }, 'gemini-3-pro-preview')).toEqual({ thinkingBudget: 4096, includeThoughts: true })
    expect(thinking({ enabled: true }, 'gemini-flash-latest')).toEqual({ includeThoughts: true })
    // Gemma has no thinking controls on this API.
    expect(thinking({ effort: 'high' }, 'gemma-3-27b-it')).toBeUndefined()
  })

  it('refuses what Gemini cannot take, naming it', () => {
    expectInvalid({ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]: item type "item_reference" is not supported by Gemini')
    expectInvalid({ tools: [{ type: 'function', name: 'f' }, { type: 'web_search_preview' }] }, 'tools[1]: tool type "web_search_preview" is not supported by Gemini')
    expectInvalid(
      { input: [{ type: 'function_call_output', call_id: 'call_9', output: 'x' }] },
      'input[0]: function_call_output "call_9" has no function_call with that call_id earlier in input (Gemini needs the function name)',
    )
    expectInvalid({ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{"a":' }] }, 'input[0].arguments: not valid JSON')
    expectInvalid({ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '[1]' }] }, 'input[0].arguments: must be a JSON object for Gemini')
    expectInvalid(
      { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] }] },
      'input[0].content[0]: an image without image_url (file_id) is not supported by Gemini',
    )
    expectInvalid(
      { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/svg+xml,%3Csvg%3E' }] }] },
      'input[0].content[0].image_url: only base64 data URLs are supported by Gemini',
    )
    expectInvalid({ input: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, 'input[0].content[0]: content type "input_audio" is not supported by Gemini')
    expectInvalid({ input: [{ role: 'tool', content: 'x' }] as unknown as InputItem[] }, 'input[0]: message role "tool" is not supported by Gemini')
    expectInvalid({ tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'web_search_preview' } }, 'tool_choice: "web_search_preview" is not supported by Gemini')
  })
})

describe('gemini image output', () => {
  const imageCall = (request: Partial<ResponsesRequest>) => ({ model: 'google/gemini-2.5-flash-image', ...request })
  const image = () => json('image.json').candidates[0].content.parts[1].inlineData.data as string

  it('sends modalities as responseModalities and image_config as imageConfig', () => {
    expect(body(imageCall({ modalities: ['image'] })).generationConfig).toEqual({ responseModalities: ['IMAGE'] })
    expect(body(imageCall({ modalities: ['text', 'image'], image_config: { aspect_ratio: '21:9', image_size: '2K' }, temperature: 0.4 })).generationConfig).toEqual({
      temperature: 0.4,
      responseModalities: ['TEXT', 'IMAGE'],
      imageConfig: { aspectRatio: '21:9', imageSize: '2K' },
    })
    // Text only is asked for as such: an image model then answers without a picture.
    expect(body(imageCall({ modalities: ['text'] })).generationConfig).toEqual({ responseModalities: ['TEXT'] })
    expect(body(imageCall({})).generationConfig).toBeUndefined()
  })

  it('refuses image_config keys and values Gemini cannot take, naming them', () => {
    expectInvalid(imageCall({ modalities: ['image'], image_config: { size: '1024x1024' } }), 'image_config.size: not supported by Gemini (it takes aspect_ratio and image_size)')
    expectInvalid(imageCall({ modalities: ['image'], image_config: { aspect_ratio: 1.5 } }), 'image_config.aspect_ratio: must be a string for Gemini')
    expectInvalid(imageCall({ modalities: ['image'], image_config: { toString: 'x' } }), 'image_config.toString: not supported by Gemini (it takes aspect_ratio and image_size)')
  })

  it('reads an inlineData image as a completed image_generation_call after the text, with the image tokens apart', () => {
    const read = result('image.json')
    expect(withoutIds(read.output)).toEqual([
      { id: 'string', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Here is a small orange sunset tile for you.', annotations: [], logprobs: [] }] },
      { id: 'string', type: 'image_generation_call', status: 'completed', result: image(), output_format: 'png' },
    ])
    expect(read.output[1]!.id).toMatch(/^ig_[0-9a-f]{32}$/)
    expect(read.usage).toEqual({
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 1300,
      output_tokens_details: { reasoning_tokens: 0, image_tokens: 1290 },
      total_tokens: 1312,
    })
  })

  it('streams the image whole, with OpenAI’s image_generation_call events between its added and done', async () => {
    const events = await stream('image.sse', 7)
    const imageEvents = events.filter((event) => event.type.startsWith('response.image_generation_call') || event.item?.type === 'image_generation_call')
    const id = imageEvents[0]!.item.id
    expect(imageEvents).toEqual([
      { type: 'response.output_item.added', output_index: 1, item: { id, type: 'image_generation_call', status: 'in_progress', result: null, output_format: 'png' } },
      { type: 'response.image_generation_call.in_progress', item_id: id, output_index: 1 },
      { type: 'response.image_generation_call.generating', item_id: id, output_index: 1 },
      { type: 'response.image_generation_call.completed', item_id: id, output_index: 1 },
      { type: 'response.output_item.done', output_index: 1, item: { id, type: 'image_generation_call', status: 'completed', result: image(), output_format: 'png' } },
    ])
    // The text item is closed before the image opens: output order is the upstream's.
    const textDone = events.findIndex((event) => event.type === 'response.output_item.done' && event.item.type === 'message')
    expect(textDone).toBeLessThan(events.indexOf(imageEvents[0]!))
  })

  it('leaves out the draft images a thinking image model shows as thoughts, and media that is not an image', () => {
    const answer = {
      candidates: [
        {
          content: {
            parts: [
              { inlineData: { mimeType: 'image/png', data: 'ZHJhZnQ=' }, thought: true },
              { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
              { inlineData: { mimeType: 'image/jpeg', data: 'ZmluYWw=' } },
            ],
            role: 'model',
          },
          finishReason: 'STOP',
        },
      ],
    }
    const read = geminiAdapter.readResult(answer, call({}))
    expect(withoutIds(read.output)).toEqual([{ id: 'string', type: 'image_generation_call', status: 'completed', result: 'ZmluYWw=', output_format: 'jpeg' }])
  })

  it('sends a generated image back as a model inlineData part, so the model can edit it', () => {
    const output = result('image.json').output
    const contents = body({ input: [{ role: 'user', content: 'Draw a tile' }, ...(output as InputItem[]), { role: 'user', content: 'Make it blue' }] }).contents
    expect(contents).toEqual([
      { role: 'user', parts: [{ text: 'Draw a tile' }] },
      { role: 'model', parts: [{ text: 'Here is a small orange sunset tile for you.' }, { inlineData: { mimeType: 'image/png', data: image() } }] },
      { role: 'user', parts: [{ text: 'Make it blue' }] },
    ])
  })
})

describe('gemini readResult', () => {
  it('reads a text answer', () => {
    const read = result('text.json')
    expect(read.status).toBe('completed')
    expect(read.incompleteDetails).toBeNull()
    expect(read.upstreamId).toBe('kQ3vaZ2yL8Obz7IP4YTRqAw')
    expect(withoutIds(read.output)).toEqual([
      {
        id: 'string',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [
          {
            type: 'output_text',
            text: 'The capital of France is Paris, nicknamed the « Ville Lumière ». It sits on the Seine and has been the seat of French government for most of the last thousand years.',
            annotations: [], logprobs: [],
          },
        ],
      },
    ])
    expect(read.usage).toEqual({
      input_tokens: 11,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 402,
      output_tokens_details: { reasoning_tokens: 364 },
      total_tokens: 413,
    })
  })

  it('reads parallel function calls, the signature in a reasoning item before the signed call', () => {
    const read = result('tool-call.json')
    const signature = json('tool-call.json').candidates[0].content.parts[0].thoughtSignature
    expect(withoutIds(read.output)).toEqual([
      { id: 'string', type: 'reasoning', summary: [], format: 'google-gemini-v1', signature, status: 'completed' },
      { id: 'string', type: 'function_call', status: 'completed', call_id: 'call_m36LaZGyCLz1xs0PtNSB-QU_0', name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
      { id: 'string', type: 'function_call', status: 'completed', call_id: 'call_m36LaZGyCLz1xs0PtNSB-QU_1', name: 'get_weather', arguments: '{"city":"Tokyo","unit":"celsius"}' },
    ])
    expect(read.status).toBe('completed')
    expect(read.usage).toEqual({
      input_tokens: 2385,
      input_tokens_details: { cached_tokens: 2011 },
      output_tokens: 486,
      output_tokens_details: { reasoning_tokens: 452 },
      total_tokens: 2871,
    })
  })

  it('uses the call id Gemini gives when there is one', () => {
    const read = geminiAdapter.readResult(
      { candidates: [{ content: { parts: [{ functionCall: { id: 'fc-7', name: 'f', args: { a: 1 } } }], role: 'model' }, finishReason: 'STOP' }] },
      call({}),
    )
    expect(read.output[0]).toMatchObject({ type: 'function_call', call_id: 'fc-7', arguments: '{"a":1}' })
  })

  it('reads thought summaries and the trailing answer signature', () => {
    const read = result('reasoning.json')
    const signature = json('reasoning.json').candidates[0].content.parts[1].thoughtSignature
    expect(withoutIds(read.output)).toEqual([
      {
        id: 'string',
        type: 'reasoning',
        format: 'google-gemini-v1',
        status: 'completed',
        summary: [
          {
            type: 'summary_text',
            text: '**Counting the letters**\n\nI\'m spelling out "strawberry" one letter at a time: s-t-r-a-w-b-e-r-r-y. I see an r in third position and two more side by side near the end, so that is three in total.\n\n\n',
          },
        ],
      },
      {
        id: 'string',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'There are **3** r\'s in "strawberry": st**r**awbe**rr**y.', annotations: [], logprobs: [] }],
      },
      { id: 'string', type: 'reasoning', summary: [], format: 'google-gemini-v1', signature, status: 'completed' },
    ])
    expect(read.usage).toEqual({
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 319,
      output_tokens_details: { reasoning_tokens: 298 },
      total_tokens: 331,
    })
  })

  it('reads MAX_TOKENS as incomplete', () => {
    const read = result('max-tokens.json')
    expect(read.status).toBe('incomplete')
    expect(read.incompleteDetails).toEqual({ reason: 'max_output_tokens' })
    expect(read.output[0]).toMatchObject({ type: 'message', status: 'incomplete' })
    expect(read.usage!.output_tokens).toBe(20)
  })

  it('reads safety stops as content_filter', () => {
    for (const reason of ['SAFETY', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'RECITATION']) {
      const read = geminiAdapter.readResult({ candidates: [{ finishReason: reason, index: 0 }], usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 } }, call({}))
      expect(read, reason).toMatchObject({ status: 'incomplete', incompleteDetails: { reason: 'content_filter' }, output: [] })
    }
  })

  it('fails a blocked prompt as content_policy_violation', () => {
    expect(() => result('prompt-blocked.json')).toThrow(UpstreamFailure)
    try {
      result('prompt-blocked.json')
    } catch (error) {
      expect(error).toMatchObject({ errorType: 'content_policy_violation', status: 400, message: 'Gemini blocked the prompt (PROHIBITED_CONTENT)', providerCode: 'PROHIBITED_CONTENT' })
    }
  })
})

describe('gemini readStream', () => {
  const pairs = [
    ['text.sse', 'text.json'],
    ['tool-call.sse', 'tool-call.json'],
    ['reasoning.sse', 'reasoning.json'],
    ['max-tokens.sse', 'max-tokens.json'],
    ['image.sse', 'image.json'],
  ] as const

  for (const [sse, jsonName] of pairs) {
    for (const size of [1, 7]) {
      it(`${sse} in ${size}-byte chunks matches ${jsonName}`, async () => {
        const events = await stream(sse, size)
        assertValidEventSequence(events)
        const expected = result(jsonName)
        expect(withoutIds(doneItems(events))).toEqual(withoutIds(expected.output))
        expect(events.at(-2)).toEqual({ type: 'upstream.usage', usage: expected.usage })
        expect(events.at(-1)).toEqual({ type: 'upstream.finish', status: expected.status, incompleteDetails: expected.incompleteDetails })
        expect(events.filter((event) => event.type.startsWith('upstream.'))).toHaveLength(2)
      })
    }
  }

  it('yields text as it arrives, one delta per chunk', async () => {
    const deltas = (await stream('text.sse', 7)).filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta)
    expect(deltas).toEqual(['The capital of France is Paris', ', nicknamed the « Ville Lumière ». It sits on the Seine and has been the seat of French', ' government for most of the last thousand years.'])
  })

  it('emits each whole function call as one arguments delta', async () => {
    const events = await stream('tool-call.sse', 7)
    expect(events.filter((event) => event.type === 'response.function_call_arguments.delta').map((event) => event.delta)).toEqual([
      '{"city":"Paris","unit":"celsius"}',
      '{"city":"Tokyo","unit":"celsius"}',
    ])
  })

  it('throws the in-band error after yielding the earlier text', async () => {
    for (const size of [1, 7]) {
      const { events, error } = await untilThrow(geminiAdapter.readStream(chunked(fixture('gemini', 'error-midstream.sse'), size), call({}, { stream: true })))
      expect(error).toBeInstanceOf(UpstreamFailure)
      expect(error).toMatchObject({ errorType: 'provider_overloaded', status: 529, providerCode: 'UNAVAILABLE', message: 'The model is overloaded. Please try again later.' })
      const text = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta).join('')
      expect(text).toBe('Here is a short history of the printing press. Johannes Gutenberg built his press in Mainz around 1440,')
      expect(events.some((event) => event.type.startsWith('upstream.'))).toBe(false)
    }
  })

  it('throws when the body ends before a finish reason', async () => {
    const whole = fixture('gemini', 'text.sse').toString('utf8')
    const truncated = whole.slice(0, whole.lastIndexOf('data: '))
    const { events, error } = await untilThrow(geminiAdapter.readStream(chunked(truncated, 7), call({}, { stream: true })))
    expect(error).toMatchObject({ errorType: 'provider_unavailable', status: 502 })
    expect(events.filter((event) => event.type === 'response.output_text.delta')).toHaveLength(2)
    // Cut mid-event, too.
    const cut = await untilThrow(geminiAdapter.readStream(chunked(whole.slice(0, whole.length - 40), 7), call({}, { stream: true })))
    expect(cut.error).toMatchObject({ errorType: 'provider_unavailable' })
  })

  it('throws content_policy_violation for a blocked prompt', async () => {
    const { events, error } = await untilThrow(geminiAdapter.readStream(chunked(fixture('gemini', 'prompt-blocked.sse'), 7), call({}, { stream: true })))
    expect(events).toEqual([])
    expect(error).toMatchObject({ errorType: 'content_policy_violation' })
  })

  it('reports no usage when the upstream sent none, so the engine estimates it', async () => {
    const sse = 'data: {"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"finishReason": "STOP","index": 0}]}\r\n\r\n'
    const events = await collect(geminiAdapter.readStream(chunked(sse, 5), call({}, { stream: true })))
    expect(events.at(-1)).toMatchObject({ type: 'upstream.finish', status: 'completed' })
    expect(events.some((event) => event.type === 'upstream.usage')).toBe(false)
  })
})

describe('gemini thought signature round trip', () => {
  const continueWith = (output: OutputItem[], upstreamModel = 'gemini-3-pro-preview') =>
    body({ input: [{ role: 'user', content: 'Weather in Paris and Tokyo?' }, ...(output as InputItem[])] }, { upstreamModel }).contents

  it('puts a function call signature back on that call', async () => {
    const signature = json('tool-call.json').candidates[0].content.parts[0].thoughtSignature
    const fromStream = doneItems(await stream('tool-call.sse', 7))
    for (const output of [result('tool-call.json').output, fromStream]) {
      const replay = [
        ...output,
        { type: 'function_call_output', call_id: 'call_m36LaZGyCLz1xs0PtNSB-QU_0', output: '{"temperature":18}' },
        { type: 'function_call_output', call_id: 'call_m36LaZGyCLz1xs0PtNSB-QU_1', output: '{"temperature":24}' },
      ] as OutputItem[]
      const contents = continueWith(replay)
      expect(contents[1]).toEqual({
        role: 'model',
        parts: [
          { functionCall: { id: 'call_m36LaZGyCLz1xs0PtNSB-QU_0', name: 'get_weather', args: { city: 'Paris', unit: 'celsius' } }, thoughtSignature: signature },
          { functionCall: { id: 'call_m36LaZGyCLz1xs0PtNSB-QU_1', name: 'get_weather', args: { city: 'Tokyo', unit: 'celsius' } } },
        ],
      })
      expect(contents[2].parts.map((part: { functionResponse: { name: string } }) => part.functionResponse.name)).toEqual(['get_weather', 'get_weather'])
    }
  })

  it('puts a text answer signature back on the last text part, without the summaries', async () => {
    const signature = json('reasoning.json').candidates[0].content.parts[1].thoughtSignature
    const fromStream = doneItems(await stream('reasoning.sse', 7))
    for (const output of [result('reasoning.json').output, fromStream]) {
      expect(continueWith(output)[1]).toEqual({
        role: 'model',
        parts: [{ text: 'There are **3** r\'s in "strawberry": st**r**awbe**rr**y.', thoughtSignature: signature }],
      })
    }
  })
})

describe('gemini toError', () => {
  const cases: Array<[file: string, upstreamStatus: number, status: number, errorType: string]> = [
    ['error-400-context.json', 400, 400, 'context_length_exceeded'],
    ['error-400-array.json', 400, 400, 'context_length_exceeded'],
    ['error-401.json', 400, 401, 'authentication'],
    ['error-401-unauthenticated.json', 401, 401, 'authentication'],
    ['error-403.json', 403, 403, 'permission_denied'],
    ['error-429.json', 429, 429, 'rate_limit_exceeded'],
    ['error-overloaded.json', 503, 529, 'provider_overloaded'],
    ['error-500.json', 500, 502, 'provider_unavailable'],
    ['error-504.json', 504, 524, 'timeout'],
  ]
  for (const [file, upstreamStatus, status, errorType] of cases) {
    it(`${file} (HTTP ${upstreamStatus}) → ${status} ${errorType}`, () => {
      const text = fixture('gemini', file).toString('utf8')
      const error = geminiAdapter.toError(upstreamStatus, text)
      expect(isGatewayError(error)).toBe(true)
      expect(error).toBeInstanceOf(UpstreamFailure)
      expect(error.status).toBe(status)
      expect(error.metadata?.error_type).toBe(errorType)
      const parsed = JSON.parse(text)
      expect(error.message).toBe((Array.isArray(parsed) ? parsed[0] : parsed).error.message)
      expect((error as UpstreamFailure).upstreamStatus).toBe(upstreamStatus)
    })
  }

  it('reads the retry delay from RetryInfo', () => {
    const error = geminiAdapter.toError(429, fixture('gemini', 'error-429.json').toString('utf8')) as UpstreamFailure
    expect(error.retryAfterSeconds).toBe(33)
    expect(error.metadata).toEqual({ error_type: 'rate_limit_exceeded', provider_code: 'RESOURCE_EXHAUSTED' })
  })

  it('survives empty, HTML and plain-text bodies', () => {
    expect(geminiAdapter.toError(502, '')).toMatchObject({ status: 502, message: 'Gemini returned HTTP 502', metadata: { error_type: 'provider_unavailable' } })
    const html = '<!DOCTYPE html>\n<html lang=en><title>Error 502 (Server Error)!!1</title><p>That’s an error.</p></html>'
    expect(geminiAdapter.toError(502, html)).toMatchObject({ status: 502, message: 'Gemini returned HTTP 502', metadata: { error_type: 'provider_unavailable' } })
    expect(geminiAdapter.toError(503, 'upstream connect error or disconnect/reset before headers')).toMatchObject({
      status: 529,
      message: 'upstream connect error or disconnect/reset before headers',
    })
    expect(geminiAdapter.toError(400, '{"error": {"code": 400, "mess')).toMatchObject({ status: 400, metadata: { error_type: 'invalid_request' } })
  })

  it('never repeats a key quoted in the body', () => {
    const text = JSON.stringify({ error: { code: 400, message: `API key not valid: ${KEY}. See https://x.test/?key=${KEY}`, status: 'INVALID_ARGUMENT' } })
    const error = geminiAdapter.toError(400, text)
    expect(error.message).not.toContain(KEY)
    expect(error.message).not.toContain('AIza')
    expect(error.metadata?.error_type).toBe('authentication')
  })

  it('maps other Google status names', () => {
    const failure = (status: number, body: object) => geminiAdapter.toError(status, JSON.stringify({ error: body })).metadata?.error_type
    expect(failure(404, { code: 404, message: 'models/gemini-9 is not found for API version v1beta', status: 'NOT_FOUND' })).toBe('not_found')
    expect(failure(400, { code: 400, message: 'User location is not supported for the API use.', status: 'FAILED_PRECONDITION' })).toBe('permission_denied')
    expect(failure(503, { code: 503, message: 'Service unavailable', status: 'UNAVAILABLE' })).toBe('provider_unavailable')
    expect(failure(400, { code: 400, message: 'Invalid JSON payload received. Unknown name "foo"', status: 'INVALID_ARGUMENT' })).toBe('invalid_request')
  })
})
