/**
 * The built-in runtime: interns run inside the gateway. Provisioning prepares the intern's vault and
 * agent loop; chat drives the intern's instructions and model through the gateway's own response
 * pipeline, offering the `service.provide_input` tool so the intern can pause and ask.
 */

import { randomHex } from '../core/crypto'
import type { InputItem } from '../providers/types'
import { PROVIDE_INPUT_TOOL, type InternRuntime, type InternView } from './runtime'

/** Provider tool names cannot hold dots, so the tool travels upstream under this name. */
export const UPSTREAM_PROVIDE_INPUT_TOOL = 'service_provide_input'

const PROVISIONING_STEPS = ['Reserving the intern', 'Preparing the vault', 'Starting the agent loop'] as const

const provideInputTool = {
  type: 'function',
  name: UPSTREAM_PROVIDE_INPUT_TOOL,
  description:
    'Pause and ask your user. Call this when you need their permission before acting, or an answer you cannot find yourself. ' +
    'The conversation resumes with their reply as the result of this call.',
  parameters: {
    type: 'object',
    properties: {
      kind: { type: 'string', enum: ['permission', 'question'], description: 'Whether you ask for permission or for an answer.' },
      prompt: { type: 'string', description: 'What you ask, addressed to the user.' },
    },
    required: ['kind', 'prompt'],
    additionalProperties: false,
  },
}

/** Renames the pause tool in history going upstream (the client sees and answers `service.provide_input`). */
const toUpstream = (items: InputItem[]): InputItem[] =>
  items.map((item) => (item.type === 'function_call' && item.name === PROVIDE_INPUT_TOOL ? { ...item, name: UPSTREAM_PROVIDE_INPUT_TOOL } : item))

/** `approval_mode: manual`: the built-in intern's only way to act is to answer, so it asks before committing to anything. */
const MANUAL_APPROVAL =
  'Approval mode is manual: before you take or commit to any action on your user\'s behalf, ask their permission with the tool for that (kind "permission") and wait for the answer.'

export interface InProcessRuntimeOptions {
  /** Domain under which interns get their hostnames (default `interns.local`). */
  hostnameDomain?: string
}

export const inProcessRuntime = (options: InProcessRuntimeOptions = {}): InternRuntime => {
  const domain = options.hostnameDomain ?? 'interns.local'
  return {
    async provision(intern: InternView, report) {
      for (const [index, label] of PROVISIONING_STEPS.entries()) {
        await report({ label, number: index + 1, total: PROVISIONING_STEPS.length })
      }
      return { hostname: intern.hostname ?? `${intern.name}-${randomHex(3)}.${domain}` }
    },
    async suspend() {},
    async destroy() {},
    chat(intern, history, input, context) {
      const body = {
        model: intern.model,
        instructions: [
          intern.instructions ?? 'You are a helpful intern.',
          'When you need permission or an answer from your user, ask them with the tool for that instead of guessing.',
          ...(context.approvalMode === 'manual' ? [MANUAL_APPROVAL] : []),
        ].join('\n\n'),
        input: toUpstream([...history, ...input]),
        tools: [provideInputTool],
        stream: true,
      }
      return context.openSession(body, context.signal)
    },
  }
}
