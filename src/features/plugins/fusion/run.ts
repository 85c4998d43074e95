/**
 * Running a fusion request (docs/decisions.md, "Plugins: routers and fusion"): the panel's runs open in parallel,
 * each an ordinary engine run with its own routing, BYOK keys and spend reservation; once every member ended, the
 * analyst's run (again an ordinary one) compares their answers into a structured analysis, and the judge's run (with
 * the panel's answers and the analysis in its instructions) is the response. Every run's spend is reserved before any
 * is sent. The answer holds the `service:fusion` item first, then the judge's items; its usage adds up every run. A
 * stream shows the panel and the analysis as `response.fusion_call.*` events, then streams the judge's answer.
 */

import { UpstreamError, isGatewayError } from '../../../core/errors'
import { itemEventFields, type ItemEvent } from '../../../providers/events'
import { ClientClosedError } from '../../../engine/attempts'
import { toResponseFailure } from '../../../engine/fallback'
import type { InferenceRequest } from '../../../engine/request'
import { newResponseId, nowSeconds } from '../../../engine/response-identity'
import type { PipelineStage } from '../../../engine/pipeline-stage'
import type { InferenceService } from '../../../engine/service'
import { createSessionKit } from '../../../engine/session-kit'
import type { EventSink, ResponseFailure, ResponseResult, ResponseSession, SessionEvent, StoppedUsage, WholeAnswer } from '../../../engine/session-events'
import { fusionEvent, fusionItem, newFusionItemId, pendingFusionItem } from './item'
import { judgeBody } from './judge'
import { readAnalysis, withPanelAnswers, type AnalysisOutcome } from './analysis'
import { isPanelRun, openPanelRun, type PanelOutcome, type PanelRun } from './panel'
import type { ReservedRun, ReserveRun } from '../../../engine/reserved-run'
import { sumFusionUsage } from './usage'
import type { PreparedFusion } from './request-fusion'


const NO_HOOKS = { onText: () => {}, onReasoning: () => {} }

/**
 * Reserves every run's spend before any is sent: the judge's and the analyst's (on their requests before the panel's
 * answers lengthen their instructions) and each member's. One refused (402) gives the others back.
 */
const reserveAll = async (requests: readonly InferenceRequest[], reserve: ReserveRun): Promise<ReservedRun[]> => {
  const results = await Promise.allSettled(requests.map(reserve))
  const refused = results.find((result) => result.status === 'rejected')
  if (refused) {
    for (const result of results) if (result.status === 'fulfilled') result.value.release()
    throw refused.reason
  }
  return results.map((result) => (result as PromiseFulfilledResult<ReservedRun>).value)
}

/**
 * Opens every member's run at once. Throws when none could start (the first member's error: each was told no) or
 * when the client went away (then the others are stopped).
 */
const openPanel = async (panel: readonly InferenceRequest[], members: readonly ReservedRun[]): Promise<Array<PanelRun | PanelOutcome>> => {
  const opening = await Promise.allSettled(panel.map((request, index) => openPanelRun(request.requestedModel, () => members[index]!.open())))
  const refused = opening.find((result) => result.status === 'rejected')
  if (refused) {
    for (const result of opening) if (result.status === 'fulfilled' && isPanelRun(result.value)) result.value.stop()
    throw refused.reason
  }
  const runs = opening.map((result) => (result as PromiseFulfilledResult<PanelRun | PanelOutcome>).value)
  if (runs.every((run) => !isPanelRun(run))) throw (runs[0] as Extract<PanelOutcome, { isAnswered: false }>).cause ?? allFailed(runs as PanelOutcome[])
  return runs
}

/**
 * The judge's and the analyst's reservations and the panel's opened runs; theirs are given back when the panel
 * cannot start.
 */
const startPanel = async (request: InferenceRequest, fusion: PreparedFusion, reserve: ReserveRun) => {
  const [judge, analyst, ...members] = await reserveAll([request, fusion.analyst, ...fusion.panel], reserve)
  try {
    return { judge: judge!, analyst: analyst!, runs: await openPanel(fusion.panel, members) }
  } catch (error) {
    judge!.release()
    analyst!.release()
    throw error
  }
}

/** Opens the analyst's run on the panel's answers: a run to play, or the outcome of one that could not start. */
const openAnalysis = (analyst: ReservedRun, fusion: PreparedFusion, outcomes: readonly PanelOutcome[]) =>
  openPanelRun(fusion.analyst.requestedModel, () => analyst.open({ ...fusion.analyst, body: withPanelAnswers(fusion.analyst.body, outcomes) }))

const allFailed = (outcomes: readonly PanelOutcome[]) =>
  new UpstreamError(
    `Every analysis model failed: ${outcomes.map((outcome) => `${outcome.model}: ${outcome.isAnswered ? 'answered' : outcome.error}`).join('; ')}`,
    { metadata: { error_type: 'provider_unavailable' } },
  )

/** Why no analysis model answered: the request's deadline when it passed (each member then failed for want of time). */
const panelFailure = (request: InferenceRequest, outcomes: readonly PanelOutcome[]) => (request.deadline.isPassed ? request.deadline.error() : allFailed(outcomes))

const fusionStage = (outcomes: readonly PanelOutcome[], analysis: AnalysisOutcome, judge: string): PipelineStage => {
  const answered = outcomes.filter((outcome) => outcome.isAnswered).map((outcome) => outcome.model)
  const failed = outcomes.filter((outcome) => !outcome.isAnswered).map((outcome) => outcome.model)
  const analysed = analysis.isAnalysed ? `${analysis.model} analysed` : `${analysis.model}'s analysis failed`
  return {
    type: 'plugin',
    name: 'fusion',
    summary: `${answered.length} of ${outcomes.length} analysis models answered; ${analysed}; ${judge} judged`,
    data: {
      analysis_models: outcomes.map((outcome) => outcome.model),
      analyst_model: analysis.model,
      judge_model: judge,
      ...(failed.length > 0 ? { failed_models: failed } : {}),
      ...(analysis.isAnalysed ? {} : { analysis_failure_reason: analysis.failureReason }),
    },
  }
}

/** The judge's request: the panel's answers and the analysis in its instructions, the fusion stage in its metadata. */
const judgeRequest = (request: InferenceRequest, outcomes: readonly PanelOutcome[], analysis: AnalysisOutcome): InferenceRequest => ({
  ...request,
  body: judgeBody(request.body, outcomes, analysis),
  routing: { strategy: 'fusion' },
  pipeline: [...(request.pipeline ?? []), fusionStage(outcomes, analysis, request.attempts[0]!.model.slug)],
})

/** Plays every opened run to its end; a client going away stops them all. */
const playPanel = async (request: InferenceRequest, runs: ReadonlyArray<PanelRun | PanelOutcome>): Promise<PanelOutcome[]> => {
  const stopAll = () => runs.forEach((run) => isPanelRun(run) && run.stop())
  request.signal.addEventListener('abort', stopAll, { once: true })
  try {
    return await Promise.all(runs.map((run) => (isPanelRun(run) ? run.play(NO_HOOKS) : run)))
  } finally {
    request.signal.removeEventListener('abort', stopAll)
  }
}

/** The analyst's analysis of the panel's answers (or why there is none); the judge's reservation is given back on a throw. */
const analyseWhole = async (request: InferenceRequest, fusion: PreparedFusion, analyst: ReservedRun, judge: ReservedRun, outcomes: readonly PanelOutcome[]) => {
  try {
    const [outcome] = await playPanel(request, [await openAnalysis(analyst, fusion, outcomes)])
    if (request.signal.aborted) throw new ClientClosedError()
    return readAnalysis(outcome!)
  } catch (error) {
    judge.release()
    throw error
  }
}

/** A whole fusion answer. */
export const answerFusion = async (service: InferenceService, request: InferenceRequest, fusion: PreparedFusion, reserve: ReserveRun): Promise<WholeAnswer> => {
  const { judge, analyst, runs } = await startPanel(request, fusion, reserve)
  const outcomes = await playPanel(request, runs)
  if (request.signal.aborted || outcomes.every((outcome) => !outcome.isAnswered)) {
    judge.release()
    analyst.release()
    throw request.signal.aborted ? new ClientClosedError() : panelFailure(request, outcomes)
  }
  const analysis = await analyseWhole(request, fusion, analyst, judge, outcomes)
  const judged = await judge.answer(judgeRequest(request, outcomes, analysis))
  const { result } = judged
  return {
    request: request.body,
    result: {
      ...result,
      output: [fusionItem(newFusionItemId(), outcomes, analysis), ...result.output],
      usage: sumFusionUsage([...outcomes.map((outcome) => outcome.usage), analysis.usage, result.usage]),
    },
    overheadMs: judged.overheadMs,
  }
}

/** Shifts an item event of the judge past the fusion item. */
const shifted = <E extends ItemEvent>(event: E): E => {
  return { ...itemEventFields(event), output_index: event.output_index + 1 } as E
}

/** A streamed fusion answer: resolves once every member's run has opened; rejects as `answerFusion` would. */
export const openFusionSession = async (service: InferenceService, request: InferenceRequest, fusion: PreparedFusion, reserve: ReserveRun): Promise<ResponseSession> => {
  const openedAt = performance.now()
  const { judge, analyst, runs } = await startPanel(request, fusion, reserve)
  const overheadMs = performance.now() - openedAt

  const start = (sink: EventSink<SessionEvent>) => {
    const id = newResponseId()
    const createdAt = nowSeconds(service)
    const itemId = newFusionItemId()
    const judgeModel = request.attempts[0]!.model.slug
    const analystModel = fusion.analyst.requestedModel
    const outcomes: Array<PanelOutcome | undefined> = runs.map((run) => (isPanelRun(run) ? undefined : run))
    let analysisRun: PanelRun | undefined
    let analysis: AnalysisOutcome | undefined
    const kit = createSessionKit(service, sink, { requestId: request.requestId, producer: 'fusion stream' })
    // Once the analyst's or the judge's run is opening, its reservation is settled with it; before, a stop gives it back.
    let isAnalystOpening = false
    let isJudgeOpening = false
    let stopJudge: (() => StoppedUsage | undefined) | undefined
    // What the judge had used when its client went away without a stop (the request's signal aborted).
    let judgeStopped: StoppedUsage | undefined
    const relay = (type: string, fields: Record<string, unknown> = {}) => sink.write({ type: 'relayed', event: fusionEvent(type, itemId, 0, fields) })
    // `message`, not OpenRouter's `error`: the openai SDK throws on any stream event with a top-level `error` key.
    const relayFailure = (outcome: Extract<PanelOutcome, { isAnswered: false }>) =>
      relay('panel.failed', { model: outcome.model, message: outcome.error, ...(outcome.statusCode === undefined ? {} : { status_code: outcome.statusCode }) })
    // A failed analysis completes without `analysis`, saying why in `message` (not `error`, as above).
    const relayAnalysis = (outcome: AnalysisOutcome, names: Record<string, string>) => {
      const fields = outcome.isAnalysed
        ? { analysis: outcome.analysis }
        : { message: outcome.error, failure_reason: outcome.failureReason, ...(outcome.statusCode === undefined ? {} : { status_code: outcome.statusCode }) }
      relay('analysis.completed', { ...names, ...fields })
      return outcome
    }
    const usedBeforeJudge = () => [...outcomes.map((outcome) => outcome?.usage ?? null), analysis?.usage ?? null]
    const releaseUnopened = () => {
      if (!isAnalystOpening) analyst.release()
      if (!isJudgeOpening) judge.release()
    }

    const finishFailed = (error: ResponseFailure, output: ResponseResult['output']) => {
      const usage = sumFusionUsage(usedBeforeJudge())
      kit.finish(usage, error, { id, createdAt, completedAt: nowSeconds(service), model: judgeModel, status: 'failed', output, usage, error, incompleteDetails: null, servedBy: null })
    }

    const playPanel = (run: PanelRun | PanelOutcome, index: number): Promise<void> => {
      if (!isPanelRun(run)) return Promise.resolve()
      return run
        .play({
          onText: (delta) => void (kit.isEnded || relay('panel.delta', { model: run.model, delta })),
          onReasoning: (delta) => void (kit.isEnded || relay('panel.reasoning.delta', { model: run.model, delta })),
        })
        .then((outcome) => {
          outcomes[index] = outcome
          if (kit.isEnded) return
          if (outcome.isAnswered) relay('panel.completed', { model: outcome.model, content: outcome.content })
          else relayFailure(outcome)
        })
    }

    /** Passes the judge's events on, after the fusion item; its usage and result become the whole response's. */
    const playJudge = (session: ResponseSession, item: ResponseResult['output'][number]) =>
      new Promise<void>((resolve) => {
        stopJudge = session.start({
          write(event) {
            switch (event.type) {
              case 'started':
              case 'debug':
                return true
              case 'keep_alive':
              case 'error':
                return sink.write(event)
              case 'usage':
                return sink.write({ type: 'usage', usage: sumFusionUsage([...usedBeforeJudge(), event.usage]) })
              case 'finished': {
                const { result } = event
                return sink.write({
                  type: 'finished',
                  result: { ...result, id, createdAt, output: [item, ...result.output], usage: sumFusionUsage([...usedBeforeJudge(), result.usage]) },
                })
              }
              case 'relayed': {
                const index = event.event.output_index
                return sink.write(typeof index === 'number' ? { type: 'relayed', event: { ...event.event, output_index: index + 1 } } : event)
              }
              default:
                return sink.write(shifted(event))
            }
          },
          ready: () => sink.ready(),
          close: (stopped) => {
            stopJudge = undefined
            judgeStopped = stopped
            resolve()
          },
          fail: (error) => {
            stopJudge = undefined
            kit.fail(error)
            resolve()
          },
        })
      })

    /** The analyst's run between its two events; undefined when the client left meanwhile. */
    const playAnalysis = async (ended: readonly PanelOutcome[]): Promise<AnalysisOutcome | undefined> => {
      const names = { analyst_model: analystModel, judge_model: judgeModel }
      relay('analysis.in_progress', names)
      // Nothing reaches the client until the judge answers: keep-alives hold the connection open.
      kit.keepAlive('always')
      isAnalystOpening = true
      const opened = await openAnalysis(analyst, fusion, ended)
      if (isPanelRun(opened)) {
        // Started even when the client already left, so that stopping it settles its reservation.
        const playing = opened.play(NO_HOOKS)
        if (kit.isEnded) opened.stop()
        else analysisRun = opened
        const outcome = await playing
        if (!kit.isEnded) return relayAnalysis(readAnalysis(outcome), names)
      } else if (!kit.isEnded) return relayAnalysis(readAnalysis(opened), names)
      judge.release()
      return undefined
    }

    const run = async () => {
      sink.write({ type: 'started', id, createdAt, model: judgeModel, servedBy: null })
      sink.write({ type: 'response.output_item.added', output_index: 0, item: pendingFusionItem(itemId) })
      relay('in_progress')
      for (const member of runs) relay('panel.added', { model: member.model })
      for (const outcome of outcomes) if (outcome && !outcome.isAnswered) relayFailure(outcome)
      await Promise.all(runs.map(playPanel))
      if (kit.isEnded) return releaseUnopened()
      const ended = outcomes as PanelOutcome[]
      if (ended.every((outcome) => !outcome.isAnswered)) {
        releaseUnopened()
        const item = fusionItem(itemId, ended)
        relay('completed')
        sink.write({ type: 'response.output_item.done', output_index: 0, item })
        return finishFailed(toResponseFailure(panelFailure(request, ended)), [item])
      }
      analysis = await playAnalysis(ended)
      if (!analysis) return
      const item = fusionItem(itemId, ended, analysis)
      relay('completed')
      sink.write({ type: 'response.output_item.done', output_index: 0, item })
      isJudgeOpening = true
      let session: ResponseSession
      try {
        session = await judge.open(judgeRequest(request, ended, analysis))
      } catch (error) {
        if (kit.isEnded) return
        kit.keepAlive('off')
        if (!isGatewayError(error)) throw error
        return finishFailed(toResponseFailure(error), [item])
      }
      kit.keepAlive('off')
      if (kit.isEnded) {
        session.start({ write: () => true, ready: () => Promise.resolve(), close: () => {}, fail: () => {} })()
        return
      }
      await playJudge(session, item)
      kit.end(judgeStopped && { usage: sumFusionUsage([...usedBeforeJudge(), judgeStopped.usage]), isEstimated: judgeStopped.isEstimated })
    }

    // A bug, not an upstream failure: the client must not take what it got for a whole answer.
    kit.run(run, releaseUnopened)

    // The consumer went away: every run still going stops, each settling its own spend; the record gets their sum.
    return kit.stopper((): StoppedUsage => {
      // A member's outcome, once recorded, holds its usage; before, stopping the run tells it.
      const used = runs.map((member, index): StoppedUsage | undefined => {
        const usage = outcomes[index]?.usage
        if (usage) return { usage, isEstimated: false }
        return isPanelRun(member) ? member.stop() : undefined
      })
      used.push(analysis?.usage ? { usage: analysis.usage, isEstimated: false } : analysisRun?.stop(), stopJudge?.())
      const parts = used.filter((part): part is StoppedUsage => part !== undefined)
      return { usage: sumFusionUsage(parts.map((part) => part.usage)), isEstimated: parts.some((part) => part.isEstimated) }
    })
  }

  return { request: request.body, overheadMs, start }
}
