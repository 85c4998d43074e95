import * as v from 'valibot'
import { KEY_LIMIT_MAX } from './keys.schemas'
import { WorkspaceParamsSchema } from './workspaces.schemas'

export const BudgetIntervalSchema = v.picklist(['daily', 'weekly', 'monthly', 'lifetime'], 'must be "daily", "weekly", "monthly" or "lifetime"')

export const WorkspaceBudgetParamsSchema = v.strictObject({ ...WorkspaceParamsSchema.entries, interval: BudgetIntervalSchema })

/** OpenRouter's `UpsertWorkspaceBudgetRequest`: USD per interval, greater than 0. */
export const UpsertWorkspaceBudgetBodySchema = v.strictObject(
  {
    limit_usd: v.pipe(
      v.number('must be a number'),
      v.finite('must be a finite number'),
      v.check((limit) => limit > 0, 'must be greater than 0'),
      v.maxValue(KEY_LIMIT_MAX, `must be at most ${KEY_LIMIT_MAX}`),
    ),
    /** Whether BYOK spend (at the list price) counts toward every budget of the workspace; unchanged when omitted. */
    include_byok_in_budgets: v.optional(v.boolean('must be a boolean')),
  },
)
