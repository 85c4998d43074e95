/** `modelgate keys create | list | revoke`: API keys from the command line. Raw keys are printed once, by create. */

import type { Gateway } from '../gateway/gateway'
import type { ApiKeyRecord } from '../repositories/api-keys'
import { cliCommand } from './cli-command'

export interface KeyFlags {
  management?: boolean
  name?: string
  account?: string
  workspace?: string
  user?: string
  all?: boolean
}

type Output = { stdout: (text: string) => void; stderr: (text: string) => void }

/** Creates a key. The raw key goes to stdout alone, so `KEY=$(modelgate keys create)` captures it; the details go to stderr. */
export const createKeyCommand = async (gateway: Gateway, flags: KeyFlags, output: Output) => {
  const { key, record } = await gateway.admin.createKey({
    kind: flags.management ? 'management' : 'regular',
    ...(flags.name ? { name: flags.name } : {}),
    ...(flags.account ? { accountId: flags.account } : {}),
    ...(flags.workspace ? { workspaceId: flags.workspace } : {}),
    ...(flags.user ? { creatorUserId: flags.user } : {}),
  })
  output.stderr(`Created ${record.kind} key "${record.name}" (${record.label}, hash ${record.hash}). It is shown only once:\n`)
  output.stdout(`${key}\n`)
}

const HASH_PREFIX_LENGTH = 16
const COLUMNS = ['hash', 'kind', 'disabled', 'label', 'name'] as const

const toRow = (key: ApiKeyRecord): Record<(typeof COLUMNS)[number], string> => ({
  hash: key.hash.slice(0, HASH_PREFIX_LENGTH),
  kind: key.kind,
  disabled: key.disabled ? 'yes' : 'no',
  label: key.label,
  name: key.name,
})

/** Lists an account's keys as a table on stdout (enabled ones, or all with `--all`). */
export const listKeysCommand = async (gateway: Gateway, flags: KeyFlags, output: Output) => {
  const rows: Array<ReturnType<typeof toRow>> = []
  for (let offset = 0; ; offset += 100) {
    const { keys } = await gateway.admin.listKeys(flags.account, { offset, limit: 100, includeDisabled: flags.all === true })
    if (keys.length === 0) break
    rows.push(...keys.map(toRow))
  }
  if (rows.length === 0) {
    output.stderr(flags.all ? 'No keys.\n' : 'No enabled keys (--all lists disabled ones too).\n')
    return
  }
  const widths = COLUMNS.map((column) => Math.max(column.length, ...rows.map((row) => row[column].length)))
  const format = (cells: string[]) => `${cells.map((cell, index) => cell.padEnd(widths[index]!)).join('  ').trimEnd()}\n`
  output.stdout(format([...COLUMNS]))
  for (const row of rows) output.stdout(format(COLUMNS.map((column) => row[column])))
}

/** Disables a key named by its hash or a prefix of it; it stops working at once. */
export const revokeKeyCommand = async (gateway: Gateway, hashOrPrefix: string | undefined, flags: KeyFlags, output: Output) => {
  if (!hashOrPrefix) throw new Error('modelgate: keys revoke needs the key\'s hash or a prefix of it (see modelgate keys list)')
  const key = await gateway.admin.revokeKey(flags.account, hashOrPrefix)
  output.stdout(`Disabled ${key.kind} key "${key.name}" (hash ${key.hash}). It stops working at once.\n`)
  if (key.kind !== 'management') return
  const { totalCount } = await gateway.admin.listKeys(flags.account, { kind: 'management', limit: 0 })
  if (totalCount === 0) output.stderr(`The account has no enabled management key left; create one with: ${cliCommand('keys create --management')}\n`)
}
