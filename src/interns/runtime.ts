/**
 * Where interns run. The gateway keeps each intern's record and lifecycle; a runtime does the work:
 * provisioning a place for the intern to live, suspending it, destroying it, and chatting with it.
 * The built-in runtime (in-process.ts) runs interns inside the gateway; a user may plug their own
 * (containers, VMs, a remote agent host).
 */

import type { ResponseSession } from '../engine/session-events'
import type { InputItem } from '../providers/types'

/** What a runtime knows about an intern. */
export interface InternView {
  id: string
  name: string
  workspaceId: string
  instructions: string | null
  /** The model to run with: the configured one, or the workspace default. */
  model: string
  vaultId: string | null
  attachedVaultId: string | null
  hostname: string | null
}

export interface ProvisioningStep {
  label: string
  /** 1-based. */
  number: number
  total: number
}

/**
 * How the run a prompt starts handles actions that need consent (OpenRouter's `approval_mode`):
 * `self-drive` consents on the user's behalf, `manual` asks first with `service.provide_input`.
 */
export type InternApprovalMode = 'self-drive' | 'manual'

export interface ChatContext {
  /** Set when the caller chose one; absent means `self-drive`. It applies to this prompt only. */
  approvalMode?: InternApprovalMode
  /**
   * Runs one model turn through the gateway's own response pipeline, as the intern's owner: same
   * routing, keys (BYOK) and billing as `POST /responses`. Returns the SSE `Response`.
   */
  respond(body: Record<string, unknown>, signal: AbortSignal): Promise<Response>
  /**
   * The same turn as a session of typed events rather than SSE text (always streamed, whatever `body.stream`
   * says). Return it from `chat` as it is: the gateway renames the pause tool and stores the turn from its
   * events, with no SSE round trip.
   */
  openSession(body: Record<string, unknown>, signal: AbortSignal): Promise<ResponseSession>
  signal: AbortSignal
}

export interface InternRuntime {
  /**
   * Makes the intern ready; reports each step as it starts. Resolves with the intern's hostname.
   * May be called again for an intern it already started to provision: when the gateway process
   * running a provisioning dies, another one takes the run over and calls `provision` afresh (the
   * dead run's steps may have half happened), so each step must tolerate being run twice. `report`
   * throws, and `signal` aborts, once the run was suspended, deleted or taken over.
   */
  provision(intern: InternView, report: (step: ProvisioningStep) => Promise<void>, signal: AbortSignal): Promise<{ hostname: string }>
  suspend(intern: InternView): Promise<void>
  destroy(intern: InternView): Promise<void>
  /**
   * One chat turn with a running intern: `history` is the conversation so far (input items), `input`
   * the new items. Returns a Responses event stream (SSE), or the session `context.openSession` opened. When the intern needs permission or an
   * answer it ends the turn with a `service.provide_input` function call, which the caller answers
   * with a `function_call_output` in the next turn.
   */
  chat(intern: InternView, history: InputItem[], input: InputItem[], context: ChatContext): Promise<Response | ResponseSession>
}

/** The tool a running intern calls to pause and ask its user (gaps: `service.provide_input`). */
export const PROVIDE_INPUT_TOOL = 'service.provide_input'
