/**
 * `service:fusion` as a server tool (docs/decisions.md, "Plugins: routers and fusion"): the model may call it to have
 * a panel of other models answer the conversation (and its `question`) independently, and an analyst (the tool's
 * `model`, else the request's own model) compare their answers into a structured analysis; it reads the analysis and
 * the answers and writes its own. Each member and the analyst is its own engine run for the caller (routing, BYOK
 * keys, the members' server tools), and their cost is the tool's, added to the response's usage and settled with it.
 */

import * as v from 'valibot'
import { InvalidRequestError } from '../../../core/errors'
import { ModelSlugSchema } from '../../../core/validation'
import type { InputItem } from '../../../providers/types'
import type { ResponsesRequestBody } from '../../../engine/request.schemas'
import { ServerToolFailure, historyPair, type ServerTool, type SubRuns } from '../../server-tools/contract'
import type { InferenceService } from '../../../engine/service'
import { analysisSection, analystBody, panelSection, readAnalysis, withPanelAnswers, type AnalysisOutcome, type FusionAnalysis } from './analysis'
import { withoutCallerTools } from './conversation'
import { fusionItem, FUSION_ITEM_TYPE } from './item'
import { DEFAULT_FUSION_PRESET, FUSION_PRESETS } from './presets'
import { isPanelRun, openPanelRun, type PanelOutcome } from './panel'
import { AnalysisModelsSchema, FUSION_MAX_TOOL_CALLS_DEFAULT, FUSION_MAX_TOOL_CALLS_MAX, FUSION_TOOLS_MAX } from './schemas'
import { sumFusionUsage } from './usage'

/**
 * OpenRouter's `FusionServerToolConfig`, less `cache_control` (nothing here would cache it). `model` names the
 * analyst; the other settings shape each member's run (`max_completion_tokens` and `reasoning` the analyst's too).
 */
export const FusionToolSchema = v.strictObject({
  type: v.literal('service:fusion'),
  parameters: v.optional(
    v.strictObject({
      analysis_models: v.optional(AnalysisModelsSchema),
      model: v.optional(ModelSlugSchema),
      max_completion_tokens: v.optional(v.pipe(v.number(), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'))),
      temperature: v.optional(v.pipe(v.number(), v.minValue(0, 'must be at least 0'), v.maxValue(2, 'must be at most 2'))),
      reasoning: v.optional(
        v.strictObject({
          effort: v.optional(v.picklist(['max', 'xhigh', 'high', 'medium', 'low', 'minimal', 'none'])),
          max_tokens: v.optional(v.pipe(v.number(), v.integer('must be an integer'), v.minValue(0, 'must be at least 0'))),
        }),
      ),
      tools: v.optional(
        v.pipe(
          v.array(v.strictObject({ type: v.pipe(v.string(), v.startsWith('service:', 'the panel runs server tools only'), v.check((type) => type !== 'service:fusion', 'a panel member cannot convene a panel of its own')), parameters: v.optional(v.record(v.string(), v.unknown())) })),
          v.maxLength(FUSION_TOOLS_MAX, `at most ${FUSION_TOOLS_MAX} tools`),
        ),
      ),
      max_tool_calls: v.optional(
        v.pipe(v.number(), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'), v.maxValue(FUSION_MAX_TOOL_CALLS_MAX, `must be at most ${FUSION_MAX_TOOL_CALLS_MAX}`)),
      ),
    }),
  ),
})

type FusionTool = v.InferOutput<typeof FusionToolSchema>
type Parameters = NonNullable<FusionTool['parameters']>

const CallSchema = v.object({ question: v.optional(v.nullable(v.string())) })

/** What the calling model reads: each member's answer under its model, then the analysis (or why there is none). */
const panelText = (outcomes: readonly PanelOutcome[], analysis: readonly string[] = []) => [...outcomes.map(panelSection), ...analysis].join('\n\n')

const analysisText = (analysis: AnalysisOutcome) => (analysis.isAnalysed ? analysisSection(analysis.model, analysis.analysis) : `(no analysis: ${analysis.error})`)

/** A member's request: the caller's conversation (and the question), with the tool's settings and no client tools. */
const memberBody = (body: ResponsesRequestBody, parameters: Parameters, question: string | undefined): ResponsesRequestBody => {
  const rest = withoutCallerTools(body)
  const conversation: InputItem[] = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : ((body.input ?? []) as InputItem[])
  return {
    ...rest,
    stream: true,
    input: (question ? [...conversation, { type: 'message', role: 'user', content: question }] : conversation) as ResponsesRequestBody['input'],
    ...(parameters.max_completion_tokens === undefined ? {} : { max_output_tokens: parameters.max_completion_tokens }),
    ...(parameters.temperature === undefined ? {} : { temperature: parameters.temperature }),
    ...(parameters.reasoning === undefined ? {} : { reasoning: parameters.reasoning }),
    ...(parameters.tools?.length ? { tools: parameters.tools as ResponsesRequestBody['tools'], max_tool_calls: parameters.max_tool_calls ?? FUSION_MAX_TOOL_CALLS_DEFAULT } : {}),
  }
}

const runPanel = async (subRuns: SubRuns, models: readonly string[], body: (model: string) => ResponsesRequestBody, signal: AbortSignal): Promise<PanelOutcome[]> => {
  const runs = await Promise.all(models.map((model) => openPanelRun(model, () => subRuns.open(body(model), model))))
  const stopAll = () => runs.forEach((run) => isPanelRun(run) && run.stop())
  signal.addEventListener('abort', stopAll, { once: true })
  try {
    return await Promise.all(runs.map((run) => (isPanelRun(run) ? run.play({ onText: () => {}, onReasoning: () => {} }) : run)))
  } finally {
    signal.removeEventListener('abort', stopAll)
  }
}

export const fusionTool = (tool: FusionTool, index: number, service: InferenceService): ServerTool => {
  const parameters: Parameters = tool.parameters ?? {}
  parameters.analysis_models?.forEach((model, modelIndex) => {
    if (!service.models.find(model)) throw new InvalidRequestError(`body.tools.${index}.parameters.analysis_models.${modelIndex}: model "${model}" not found`)
  })
  if (parameters.model !== undefined && !service.models.find(parameters.model)) throw new InvalidRequestError(`body.tools.${index}.parameters.model: model "${parameters.model}" not found`)
  if (parameters.max_tool_calls !== undefined && !parameters.tools?.length) {
    throw new InvalidRequestError(`body.tools.${index}.parameters.max_tool_calls: bounds the panel's tool calls, so it needs tools`)
  }
  return {
    type: tool.type,
    itemIdPrefix: 'fu',
    itemType: FUSION_ITEM_TYPE,
    definition: {
      type: 'function',
      name: 'service_fusion',
      description:
        'Asks a panel of other models to answer this conversation independently and returns their answers with an analysis of them ' +
        '(consensus, contradictions, what only some saw, blind spots). Use it when a question is hard or being wrong is costly; then write your own answer from them.',
      parameters: {
        type: 'object',
        properties: { question: { type: 'string', description: 'Optional: what the panel should answer, when it is narrower than the conversation' } },
        additionalProperties: false,
      },
    },
    pendingItem: (id) => ({ type: FUSION_ITEM_TYPE, id, status: 'in_progress' }),
    failedItem: (id, message, details) => ({ type: FUSION_ITEM_TYPE, id, status: 'failed', ...details, error: message }),
    startEvents: ['response.fusion_call.in_progress'],
    endEvents: ['response.fusion_call.completed'],
    toHistory(item) {
      const responses = Array.isArray(item.responses) ? (item.responses as Array<{ model?: unknown; content?: unknown }>) : []
      const outcomes: PanelOutcome[] = responses.map((response) => ({ isAnswered: true, model: String(response.model), content: String(response.content ?? ''), usage: null }))
      const analysis = item.analysis && typeof item.analysis === 'object' ? (item.analysis as FusionAnalysis) : undefined
      return historyPair(item, 'service_fusion', {}, item.status === 'completed' ? panelText(outcomes, analysis ? [analysisSection('analyst', analysis)] : []) : `Error: ${typeof item.error === 'string' ? item.error : 'the panel did not answer'}`)
    },
    async run(call, context) {
      const { subRuns } = context
      if (!subRuns) throw new ServerToolFailure('the panel cannot run here')
      const parsed = v.safeParse(CallSchema, call.arguments)
      const question = parsed.success ? (parsed.output.question ?? undefined) : undefined
      const models = parameters.analysis_models ?? FUSION_PRESETS[DEFAULT_FUSION_PRESET].filter((model) => subRuns.isReachable(model))
      if (models.length === 0) throw new ServerToolFailure(`none of the models of fusion preset "${DEFAULT_FUSION_PRESET}" is reachable on this gateway`)
      const outcomes = await runPanel(subRuns, models, () => memberBody(subRuns.body, parameters, question), context.signal)
      // Returned rather than thrown when every member failed: what they used is spent all the same.
      if (!outcomes.some((outcome) => outcome.isAnswered)) {
        const cost = sumFusionUsage(outcomes.map((outcome) => outcome.usage)).cost
        return { output: `Error: every analysis model failed\n\n${panelText(outcomes)}`, item: fusionItem(call.itemId, outcomes), cost }
      }
      // The analyst reads what the members read, with the tool's output settings but not its temperature or tools.
      const analystModel = parameters.model ?? subRuns.model
      const conversation = memberBody(subRuns.body, { ...parameters, temperature: undefined, tools: undefined }, question)
      const analystRequest = withPanelAnswers(analystBody(conversation, analystModel, subRuns.takesStructuredOutput(analystModel)), outcomes)
      const [analysed] = await runPanel(subRuns, [analystModel], () => analystRequest, context.signal)
      const analysis = readAnalysis(analysed!)
      const cost = sumFusionUsage([...outcomes.map((outcome) => outcome.usage), analysis.usage]).cost
      return { output: panelText(outcomes, [analysisText(analysis)]), item: fusionItem(call.itemId, outcomes, analysis), cost }
    },
  }
}
