/**
 * The operator's side of sandbox and file tools (executor.ts): what an executor is given and gives back. Public
 * (`modelgate`'s `ToolExecutor`), and apart from the tool itself so the gateway's options can name it.
 */

/** The gateway's own tool kinds that run only through an operator's executor. */
export const EXECUTOR_SERVER_TOOLS = ['service:bash', 'service:shell', 'service:apply_patch', 'service:files'] as const

/**
 * Provider tools the gateway runs through an operator's executor when no endpoint of the request's models can run
 * them (docs/decisions.md, "Server tools"). Computer use is not among them: its results are screenshots.
 */
export const EXECUTOR_PROVIDER_TOOLS = ['file_search', 'code_interpreter', 'mcp'] as const

/** The tool kinds an operator's executor runs. */
export const EXECUTABLE_TOOL_TYPES = [...EXECUTOR_SERVER_TOOLS, ...EXECUTOR_PROVIDER_TOOLS] as const
export type ExecutableToolType = (typeof EXECUTABLE_TOOL_TYPES)[number]
export type ExecutorProviderTool = (typeof EXECUTOR_PROVIDER_TOOLS)[number]
export type ExecutorServerTool = (typeof EXECUTOR_SERVER_TOOLS)[number]

/** One call of an executor's tool, as the model made it. */
export interface ToolExecutorCall {
  /** The tool kind (`service:bash`). */
  type: ExecutableToolType
  /** The model's call id. */
  callId: string
  /** The model's arguments, parsed from JSON (their shape is the tool's `parameters` schema; check them). */
  arguments: Record<string, unknown>
  /**
   * The tool's `parameters` in the request (`engine`, `environment`, `sleep_after_seconds`…), `{}` when none; for a
   * provider tool, its fields as sent (`vector_store_ids`, `container`, `server_label`…).
   */
  parameters: Record<string, unknown>
}

/** Who the call runs for, so an executor can keep one sandbox per workspace. */
export interface ToolExecutorContext {
  requestId: string
  accountId: string
  workspaceId: string
  /** Fires when the client went away or the gateway shuts down: stop the work. */
  signal: AbortSignal
}

/** What a run gives back. */
export interface ToolExecutorResult {
  /** What the model reads as the call's result (a command's output and exit code, say). */
  output: string
  /** Fields added to the item the client sees (`{ exit_code: 0 }`); `type`, `id` and `status` are the gateway's. */
  item?: Record<string, unknown>
  /** What the run cost in dollars, added to the response's cost. */
  cost?: number
}

/** An operator's runner of one tool kind. */
export interface ToolExecutor {
  /** Runs one call. A throw is a failed call: logged, and the model reads only that the tool failed. */
  run(call: ToolExecutorCall, context: ToolExecutorContext): Promise<ToolExecutorResult>
  /** What the model reads about the tool; a default per kind otherwise. */
  description?: string
  /** The JSON schema of the call's arguments; a default per kind otherwise. */
  parameters?: Record<string, unknown>
}

export type ToolExecutors = Partial<Record<ExecutableToolType, ToolExecutor>>
