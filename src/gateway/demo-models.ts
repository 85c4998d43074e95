/**
 * Demo models: free models that answer without any provider key, so a first request works before anything is set
 * up. They are the testing kit's scripted provider (src/testing/scripted-provider.ts) with built-in scripts, so a
 * demo answer goes through routing, billing (at price 0), the ledger, limits and every wire format exactly as a real
 * one does. On in the runner's development mode; elsewhere only when the operator asks (`demoModels`).
 *
 * - `demo/chat` answers with a short, deterministic summary of the last user message;
 * - `demo/tools` calls the request's first function tool with arguments made from its JSON schema, then, given the
 *   tool's result, answers with it; without tools it says it needs them;
 * - `demo/reasoning` reasons (a summary and a text) and then answers.
 */

import type { ModelEntry } from '../engine/models'
import type { ProviderConfig } from '../engine/providers'
import type { FunctionTool, InputItem, ResponsesRequest } from '../providers/types'
import type { UpstreamTransport } from '../transport/contract'
import { planAnswer, type ScriptedAnswer, type ScriptedStep } from '../testing/script'
import { scriptedAdapter } from '../testing/scripted-adapter'
import { SCRIPTED, type ScriptedCall } from '../testing/scripted-provider'
import { scriptedTransport, type ScriptPlayer } from '../testing/scripted-transport'
import { scriptedBaseURL } from '../testing/wire'

/** The provider that serves the demo models: its id, as routing, the ledger and `GET /models` name it. */
export const DEMO_PROVIDER = 'modelgate-demo'

/** The demo models' slugs. */
export const DEMO_MODELS = ['demo/chat', 'demo/tools', 'demo/reasoning'] as const

const DESCRIPTION_PREFIX = 'Demo model (development mode): free and scripted, no provider key needed; not a real model.'

const DEMO_ENTRIES: Record<(typeof DEMO_MODELS)[number], { name: string; description: string }> = {
  'demo/chat': { name: 'Demo: chat', description: `${DESCRIPTION_PREFIX} Answers with a short summary of your last message.` },
  'demo/tools': {
    name: 'Demo: tools',
    description: `${DESCRIPTION_PREFIX} Calls the first tool you offer with arguments valid for its schema, then answers with its result.`,
  },
  'demo/reasoning': { name: 'Demo: reasoning', description: `${DESCRIPTION_PREFIX} Reasons about your last message, then answers.` },
}

// A token is about four characters of English: close enough for a demo's usage, and the same every time.
const tokensOf = (text: string) => Math.max(1, Math.ceil(text.length / 4))

const MAX_QUOTE = 80

const textOfContent = (content: unknown): string => {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((part: { type?: string; text?: unknown }) => (typeof part?.text === 'string' && (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') ? part.text : ''))
    .filter(Boolean)
    .join(' ')
}

const itemsOf = (input: ResponsesRequest['input']): InputItem[] => (typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : input)

const isUserMessage = (item: InputItem): boolean => (item.type === undefined || item.type === 'message') && (item as { role?: unknown }).role === 'user'

/** The last user message's text, on one line. */
const lastUserText = (input: ResponsesRequest['input']): string => {
  const message = itemsOf(input).findLast(isUserMessage)
  return message ? textOfContent((message as { content?: unknown }).content).replace(/\s+/g, ' ').trim() : ''
}

const quote = (text: string) => (text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE - 1)}…` : text)

const wordsOf = (text: string) => text.split(/(?<= )/)

/** What a demo summary says of a message: its length and how it begins. */
const summaryOf = (text: string) => {
  if (text === '') return 'You sent no text.'
  const words = text.split(' ').length
  return `You said "${quote(text)}" (${words} ${words === 1 ? 'word' : 'words'}, ${text.length} characters).`
}

const usageOf = (request: ResponsesRequest, output: string, reasoning = ''): ScriptedStep => ({
  type: 'usage',
  inputTokens: tokensOf(JSON.stringify(request.input) + (request.instructions ?? '')),
  outputTokens: tokensOf(output) + (reasoning === '' ? 0 : tokensOf(reasoning)),
  ...(reasoning === '' ? {} : { reasoningTokens: tokensOf(reasoning) }),
})

const textAnswer = (request: ResponsesRequest, text: string): ScriptedAnswer => [{ type: 'text', text: wordsOf(text) }, usageOf(request, text)]

const chat = (request: ResponsesRequest): ScriptedAnswer => textAnswer(request, `${summaryOf(lastUserText(request.input))} This is demo/chat, a scripted demo model.`)

const reasoning = (request: ResponsesRequest): ScriptedAnswer => {
  const said = lastUserText(request.input)
  const thought = said === '' ? 'There is no text to think about, so I will say so.' : `The user wrote ${said.split(' ').length} words; I will sum them up.`
  const answer = `${summaryOf(said)} This is demo/reasoning, a scripted demo model.`
  return [{ type: 'reasoning', summary: 'Reading the last message.', text: wordsOf(thought) }, { type: 'text', text: wordsOf(answer) }, usageOf(request, answer, thought)]
}

type JsonSchema = { type?: unknown; enum?: unknown[]; const?: unknown; default?: unknown; properties?: Record<string, JsonSchema>; required?: unknown; items?: JsonSchema; minimum?: number; exclusiveMinimum?: number; maximum?: number; minLength?: number; maxLength?: number; minItems?: number; anyOf?: JsonSchema[]; oneOf?: JsonSchema[] }

const typeOf = (schema: JsonSchema): string | undefined => {
  const { type } = schema
  if (typeof type === 'string') return type
  if (Array.isArray(type)) return type.find((each) => each !== 'null') as string | undefined
  if (schema.properties) return 'object'
  return undefined
}

/** A string within the schema's length bounds. */
const stringFor = (schema: JsonSchema, seed: string): string => {
  const max = schema.maxLength ?? MAX_QUOTE
  let text = (seed === '' ? 'demo' : seed).slice(0, Math.max(0, max))
  while (text.length < (schema.minLength ?? 0)) text += '-'
  return text
}

const numberFor = (schema: JsonSchema, isInteger: boolean): number => {
  const low = schema.minimum ?? (schema.exclusiveMinimum === undefined ? undefined : schema.exclusiveMinimum + (isInteger ? 1 : 0.5))
  const value = low ?? Math.min(1, schema.maximum ?? 1)
  return isInteger ? Math.ceil(value) : value
}

/**
 * A value the schema accepts, for the schemas tools usually have (objects of strings, numbers, booleans, enums, arrays
 * of those): a `const`, a `default` or the first `enum` value where the schema has one, else a value made to fit.
 */
const valueFor = (schema: JsonSchema | undefined, seed: string, depth = 0): unknown => {
  if (!schema || typeof schema !== 'object' || depth > 8) return null
  if ('const' in schema) return schema.const
  if (schema.default !== undefined) return schema.default
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  const alternative = schema.anyOf?.[0] ?? schema.oneOf?.[0]
  if (alternative) return valueFor(alternative, seed, depth + 1)
  switch (typeOf(schema)) {
    case 'object': {
      const properties = schema.properties ?? {}
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : Object.keys(properties)
      // Required properties, or every property of a schema that lists none (a demo shows what the tool takes).
      return Object.fromEntries(required.filter((name) => Object.hasOwn(properties, name)).map((name) => [name, valueFor(properties[name], seed, depth + 1)]))
    }
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => valueFor(schema.items, seed, depth + 1))
    case 'string':
      return stringFor(schema, seed)
    case 'integer':
      return numberFor(schema, true)
    case 'number':
      return numberFor(schema, false)
    case 'boolean':
      return true
    case 'null':
      return null
    default:
      return seed === '' ? 'demo' : seed
  }
}

const isFunctionTool = (tool: { type: string }): tool is FunctionTool => tool.type === 'function' && typeof (tool as FunctionTool).name === 'string'

/** The tool results sent back since the last user message, with the name of the call each answers. */
const toolResultsOf = (input: ResponsesRequest['input']): Array<{ name: string; output: string }> => {
  const items = itemsOf(input)
  const since = items.slice(items.findLastIndex(isUserMessage) + 1)
  const names = new Map(since.filter((item) => item.type === 'function_call').map((item) => [(item as { call_id: string }).call_id, (item as { name: string }).name]))
  return since
    .filter((item) => item.type === 'function_call_output')
    .map((item) => {
      const { call_id: callId, output } = item as { call_id: string; output: unknown }
      return { name: names.get(callId) ?? 'the tool', output: typeof output === 'string' ? output : textOfContent(output) }
    })
}

const tools = (call: ScriptedCall): ScriptedAnswer => {
  const { request } = call
  const results = toolResultsOf(request.input)
  if (results.length > 0) {
    const told = results.map(({ name, output }) => `${name} returned ${quote(output.replace(/\s+/g, ' ').trim())}`).join('; ')
    return textAnswer(request, `Thanks: ${told}. This is demo/tools, a scripted demo model.`)
  }
  const tool = call.tools.find(isFunctionTool)
  if (!tool) {
    return textAnswer(request, 'demo/tools needs tools: send a request with a "tools" list of functions, and it will call the first one.')
  }
  const args = JSON.stringify(valueFor((tool.parameters ?? { type: 'object', properties: {} }) as JsonSchema, quote(lastUserText(request.input))) ?? {})
  return [{ type: 'function_call', name: tool.name, arguments: args }, usageOf(request, `${tool.name}${args}`)]
}

const answer = (call: ScriptedCall): ScriptedAnswer => {
  if (call.model === 'tools') return tools(call)
  if (call.model === 'reasoning') return reasoning(call.request)
  return chat(call.request)
}

const FREE = { prompt: 0, completion: 0 }

/** `options` with the demo models served too: their provider, their catalog entries, and the transport that plays them. */
export const withDemoModels = <Options extends { providers?: Record<string, ProviderConfig>; models?: ModelEntry[]; transport?: UpstreamTransport }>(options: Options): Options => {
  // The script alone, not a `scriptedProvider`: a test's provider keeps every call, a server must not.
  const player: ScriptPlayer = { [SCRIPTED]: async (call) => planAnswer(answer(call)) }
  const models: ModelEntry[] = DEMO_MODELS.map((slug) => ({
    slug,
    ...DEMO_ENTRIES[slug],
    endpoints: [{ provider: DEMO_PROVIDER, model: slug.slice('demo/'.length), contextLength: 128_000, maxOutputTokens: 4_096, pricing: FREE }],
  }))
  return {
    ...options,
    providers: {
      ...options.providers,
      [DEMO_PROVIDER]: { adapter: scriptedAdapter, baseURL: scriptedBaseURL(DEMO_PROVIDER), isKeyless: true, displayName: 'modelgate demo' },
    },
    // The operator's own entries come after, so one of the same slug replaces a demo model.
    models: [...models, ...(options.models ?? [])],
    transport: scriptedTransport({ [DEMO_PROVIDER]: player }, options.transport),
  }
}
