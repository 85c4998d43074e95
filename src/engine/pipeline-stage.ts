/**
 * One stage of `service_metadata.pipeline` (spec: `type`, `name`, `summary`, `data`; guardrail stages add
 * `guardrail_id` and `guardrail_scope`). Wire names, since the metadata is sent as it is.
 */
export interface PipelineStage {
  /** What ran: `plugin`, `guardrail`, `router`. */
  type: string
  /** Which one: the plugin's id, the guardrail's name. */
  name: string
  /** One sentence for people. */
  summary: string
  guardrail_id?: string
  guardrail_scope?: string
  data?: Record<string, unknown>
}
