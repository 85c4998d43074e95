/** The authenticated identity a request acts as: what the engine and the intern service need of it. */

import type { AccountFlags, AccountRecord } from '../repositories/accounts'
import type { ApiKeyRecord } from '../repositories/api-keys'

/** Who is calling: the key they presented and the account it belongs to. */
export interface Caller {
  key: ApiKeyRecord
  account: AccountRecord
  flags: AccountFlags
}
