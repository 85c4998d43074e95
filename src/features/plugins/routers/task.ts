/**
 * The auto-router's task classifier (docs/decisions.md, "Plugins: routers and fusion"): a deterministic reading of
 * the request, no model call. It names one task type, by the first rule that holds in this order, and the needs
 * every candidate must meet whatever the task type (images in, tools, context length).
 *
 * 1. `vision`: an input image is present.
 * 2. `long_context`: the prompt is estimated above `LONG_CONTEXT_TOKENS`.
 * 3. `code`: the latest user text has a code fence, a stack trace or programming vocabulary.
 * 4. `math`: it has LaTeX, an equation or mathematical vocabulary.
 * 5. `reasoning`: the request asks for high reasoning effort, or the text asks for step-by-step thinking.
 * 6. `tool_use`: the request offers tools.
 * 7. `chat`: anything else.
 */

import type { ResponsesRequestBody } from '../../../engine/request.schemas'

export const TASK_TYPES = ['vision', 'long_context', 'code', 'math', 'reasoning', 'tool_use', 'chat'] as const
export type TaskType = (typeof TASK_TYPES)[number]

/** Prompts estimated above this many tokens are long-context work. */
export const LONG_CONTEXT_TOKENS = 64_000
/** Bytes of prompt JSON per token for the estimate, as the spend reservation counts (src/engine/spend.ts). */
const BYTES_PER_TOKEN = 3

export interface TaskNeeds {
  /** The input holds images: only models that read images can answer. */
  hasImages: boolean
  /** The request offers tools: only endpoints that take `tools`. */
  hasTools: boolean
  /** The prompt's estimated tokens: only endpoints whose context holds them. */
  promptTokens: number
}

export interface TaskReading {
  taskType: TaskType
  needs: TaskNeeds
}

type Part = { type?: string; text?: unknown }
type Item = { type?: string; role?: string; content?: unknown }

const CODE_PATTERNS: readonly RegExp[] = [
  /```/,
  /\bTraceback \(most recent call last\)/,
  /\b(?:TypeError|SyntaxError|ReferenceError|NullPointerException|IndexError|KeyError|segmentation fault|stack trace)\b/i,
  // A declaration or statement as code writes it, not the English word: `def parse(`, `const total =`, `import {`.
  /\b(?:function|def|class|fn|func)\s+\w+\s*[(:{<]/,
  /\b(?:const|let|var)\s+\w+\s*=/,
  /^\s*(?:import\s+[\w{*]|from\s+\w+(?:\.\w+)*\s+import\b|#include\s*[<"])/m,
  /\bSELECT\s+[\w*,\s]+\s+FROM\s+\w+/i,
  /\b(?:refactor|debug|compile|unit tests?|regex|typescript|javascript|python|rust|golang|c\+\+|sql query|bash script|source code|function that|write a program)\b/i,
]

const MATH_PATTERNS: readonly RegExp[] = [
  /\\(?:frac|int|sum|sqrt|lim|begin\{equation)/,
  /\$\$/,
  /\b\d+\s*[-+*/^]\s*\d+\s*=/,
  /\b(?:prove|proof|theorem|lemma|integral|derivative|equation|polynomial|probability|matrix|eigen\w*|solve for|calculate|compute)\b/i,
]

const REASONING_PATTERNS: readonly RegExp[] = [/\bstep[- ]by[- ]step\b/i, /\bthink (?:carefully|hard|it through)\b/i, /\b(?:reason|trade-?offs?|pros and cons)\b/i]

const HIGH_EFFORT: ReadonlySet<string> = new Set(['high', 'xhigh', 'max'])

const partsOf = (content: unknown): Part[] => (Array.isArray(content) ? (content as Part[]) : [])

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : partsOf(content).flatMap((part) => (typeof part.text === 'string' ? [part.text] : [])).join('\n')

const itemsOf = (body: ResponsesRequestBody): Item[] =>
  typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : ((body.input ?? []) as Item[])

/** The latest user text: what the task is now, not what an earlier turn was. */
const latestUserText = (items: Item[]): string => {
  for (let index = items.length - 1; index >= 0; index -= 1) {
    const item = items[index]!
    if ((item.type === undefined || item.type === 'message') && item.role === 'user') return textOf(item.content)
  }
  return ''
}

const hasImageInput = (items: Item[]) => items.some((item) => partsOf(item.content).some((part) => part.type === 'input_image'))

const encoder = new TextEncoder()

const estimateTokens = (body: ResponsesRequestBody) =>
  Math.ceil(encoder.encode(JSON.stringify([body.instructions ?? null, body.input ?? null, body.tools ?? null])).byteLength / BYTES_PER_TOKEN)

const isReasoningAsked = (body: ResponsesRequestBody) =>
  body.reasoning?.enabled === true || (typeof body.reasoning?.effort === 'string' && HIGH_EFFORT.has(body.reasoning.effort))

/** Reads the request: its task type and the needs every candidate must meet. */
export const classifyTask = (body: ResponsesRequestBody): TaskReading => {
  const items = itemsOf(body)
  const text = latestUserText(items)
  const needs: TaskNeeds = { hasImages: hasImageInput(items), hasTools: (body.tools?.length ?? 0) > 0, promptTokens: estimateTokens(body) }
  const taskType: TaskType = needs.hasImages
    ? 'vision'
    : needs.promptTokens > LONG_CONTEXT_TOKENS
      ? 'long_context'
      : CODE_PATTERNS.some((pattern) => pattern.test(text))
        ? 'code'
        : MATH_PATTERNS.some((pattern) => pattern.test(text))
          ? 'math'
          : isReasoningAsked(body) || REASONING_PATTERNS.some((pattern) => pattern.test(text))
            ? 'reasoning'
            : needs.hasTools
              ? 'tool_use'
              : 'chat'
  return { taskType, needs }
}
