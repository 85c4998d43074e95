/** `modelgate credits grant | show`: an account's credits from the command line. Every grant is kept as a record. */

import { formatUsd, toNano } from '../core/money'
import type { Gateway } from '../gateway/gateway'

export interface CreditFlags {
  account?: string
  note?: string
}

type Output = { stdout: (text: string) => void; stderr: (text: string) => void }

const AMOUNT = /^-?\d+(\.\d+)?$/

const totals = (credits: { totalCredits: number; totalUsage: number }) =>
  `${formatUsd(toNano(credits.totalCredits))} granted, ${formatUsd(toNano(credits.totalUsage))} used`

/** Grants credits (USD; a negative amount takes some back). */
export const grantCreditsCommand = async (gateway: Gateway, amount: string | undefined, flags: CreditFlags, output: Output) => {
  if (!amount || !AMOUNT.test(amount)) {
    throw new Error('modelgate: credits grant needs an amount in USD, such as: modelgate credits grant 25 --note "March invoice"')
  }
  const granted = await gateway.admin.grantCredits(flags.account, { amount: Number(amount), note: flags.note ?? '', grantedBy: 'cli' })
  output.stdout(`Granted ${formatUsd(granted.grant.amountNano)} (grant ${granted.grant.sequence}). The account now has ${totals(granted)}.\n`)
}

const COLUMNS = ['grant', 'amount', 'by', 'created_at', 'note'] as const

/** Prints the account's totals, then its grants as a table. */
export const showCreditsCommand = async (gateway: Gateway, flags: CreditFlags, output: Output) => {
  output.stdout(`Credits: ${totals(await gateway.admin.getCredits(flags.account))}\n`)
  const rows: Array<Record<(typeof COLUMNS)[number], string>> = []
  for (let offset = 0; ; offset += 100) {
    const { grants } = await gateway.admin.listCreditGrants(flags.account, offset, 100)
    if (grants.length === 0) break
    rows.push(
      ...grants.map((grant) => ({
        grant: String(grant.sequence),
        amount: formatUsd(grant.amountNano),
        by: grant.grantedBy,
        created_at: grant.createdAt,
        note: grant.note,
      })),
    )
  }
  if (rows.length === 0) {
    output.stderr('No grants yet: modelgate credits grant <usd> adds one.\n')
    return
  }
  const widths = COLUMNS.map((column) => Math.max(column.length, ...rows.map((row) => row[column].length)))
  const format = (cells: string[]) => `${cells.map((cell, index) => cell.padEnd(widths[index]!)).join('  ').trimEnd()}\n`
  output.stdout(format([...COLUMNS]))
  for (const row of rows) output.stdout(format(COLUMNS.map((column) => row[column])))
}
