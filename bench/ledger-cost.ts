/**
 * The usage ledger's CPU per request: modelgate minus the same build with the ledger off (`modelgate/no-ledger`,
 * `ledger: { enabled: false }`), in each phase both columns ran in the same run (bench/README.md, "The usage ledger").
 */

import { figureAt, serverCpuPerRequest, type PhaseId, type Results } from './results'

const GATEWAY = 'modelgate'
const WITHOUT_LEDGER = 'modelgate/no-ledger'
const BASELINE = 'pass/undici'

export interface LedgerCost {
  phase: PhaseId
  /** Server CPU per request, µs. */
  gateway: number
  withoutLedger: number
  /** `gateway − withoutLedger`: what the ledger costs a request. */
  ledger: number
  /** The same difference round by round (the two columns take their turns side by side): the smallest and largest. */
  roundLow: number
  roundHigh: number
  /** `withoutLedger ÷ pass/undici`, to read beside the ratio of modelgate itself; absent without that column. */
  withoutLedgerRatio: number | undefined
}

export const computeLedgerCosts = (results: Results): LedgerCost[] => {
  const [gatewayIndex, withoutIndex, baselineIndex] = [GATEWAY, WITHOUT_LEDGER, BASELINE].map((label) => results.labels.indexOf(label))
  if (gatewayIndex === -1 || withoutIndex === -1) return []
  const costs: LedgerCost[] = []
  for (const [phase, cells] of Object.entries(results.cells) as Array<[PhaseId, Results['cells'][PhaseId]]>) {
    const gateway = figureAt(results, phase, gatewayIndex!, serverCpuPerRequest)
    const withoutLedger = figureAt(results, phase, withoutIndex!, serverCpuPerRequest)
    if (gateway === undefined || withoutLedger === undefined || !cells) continue
    const withRounds = cells[gatewayIndex!]!.roundCpuPerRequest
    const withoutRounds = cells[withoutIndex!]!.roundCpuPerRequest
    const roundDifferences = withRounds.slice(0, withoutRounds.length).map((value, round) => value - withoutRounds[round]!)
    const baseline = baselineIndex === -1 ? undefined : figureAt(results, phase, baselineIndex!, serverCpuPerRequest)
    costs.push({
      phase,
      gateway,
      withoutLedger,
      ledger: gateway - withoutLedger,
      roundLow: Math.min(...roundDifferences),
      roundHigh: Math.max(...roundDifferences),
      withoutLedgerRatio: baseline === undefined || !(baseline > 0) ? undefined : withoutLedger / baseline,
    })
  }
  return costs
}

export const renderLedgerCosts = (costs: LedgerCost[]): string => {
  const title = 'ledger CPU / req (µs, same run)'
  const columns = [GATEWAY, WITHOUT_LEDGER, 'ledger', 'rounds', 'share', `no-ledger ÷ ${BASELINE}`]
  const phaseWidth = Math.max(title.length, ...costs.map((cost) => cost.phase.length))
  const widths = columns.map((column) => Math.max(9, column.length))
  const line = (first: string, cells: string[]) => [first.padEnd(phaseWidth), ...cells.map((cell, index) => cell.padStart(widths[index]!))].join('  ')
  const header = line(title, columns)
  const lines = [header, '-'.repeat(header.length)]
  for (const cost of costs) {
    lines.push(
      line(cost.phase, [
        cost.gateway.toFixed(0),
        cost.withoutLedger.toFixed(0),
        cost.ledger.toFixed(0),
        `${cost.roundLow.toFixed(0)}…${cost.roundHigh.toFixed(0)}`,
        `${((cost.ledger / cost.gateway) * 100).toFixed(0)} %`,
        cost.withoutLedgerRatio === undefined ? '—' : cost.withoutLedgerRatio.toFixed(2),
      ]),
    )
  }
  return lines.join('\n')
}
