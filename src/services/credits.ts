/**
 * Credits: what an operator granted an account, grant by grant, and what it spent. A grant is written
 * first as its own numbered record, then added to the account's total; a process that dies between the
 * two leaves a record the next grant finds (its number is taken) and applies before taking the next
 * number. So every grant in the log is counted exactly once, whatever crashes or races in between.
 */

import { fromNano } from '../core/money'
import type { AccountRecord } from '../repositories/accounts'
import type { CreditGrantRecord } from '../repositories/credit-grants'
import { isUniqueConflict } from '../repositories/mutate'
import type { Repositories } from '../repositories'
import { NotFoundError } from '../core/errors'

export interface GrantCreditsInput {
  amountNano: number
  note: string
  grantedBy: string
}

// Adds grant number `sequence` to the account unless the account already holds it.
const applyGrant = async (repositories: Repositories, grant: CreditGrantRecord): Promise<AccountRecord> => {
  const updated = await repositories.accounts.update(grant.accountId, (account) =>
    account.credits.grantCount >= grant.sequence
      ? account
      : { ...account, credits: { grantedNano: account.credits.grantedNano + grant.amountNano, grantCount: grant.sequence } },
  )
  if (!updated) throw new NotFoundError('Account not found')
  return updated
}

/** Records a grant and adds it to the account's credits; resolves with the grant and the account after it. */
export const grantCredits = async (repositories: Repositories, accountId: string, input: GrantCreditsInput) => {
  for (;;) {
    const account = await repositories.accounts.get(accountId)
    if (!account) throw new NotFoundError('Account not found')
    const sequence = account.credits.grantCount + 1
    try {
      const grant = await repositories.creditGrants.create({ accountId, sequence, ...input })
      return { grant, account: await applyGrant(repositories, grant) }
    } catch (error) {
      if (!isUniqueConflict(error)) throw error
      // Another grant holds this number and is not in the total yet: finish it, then take the next number.
      const pending = await repositories.creditGrants.get(accountId, sequence)
      if (pending) await applyGrant(repositories, pending)
    }
  }
}

/** `GET /credits`: what the account was granted and what it spent of it, in USD. */
export const accountCredits = async (repositories: Repositories, account: AccountRecord, at: Date) => ({
  totalCredits: fromNano(account.credits.grantedNano),
  totalUsage: fromNano(await repositories.spend.accountUsage(account.id, at)),
})
