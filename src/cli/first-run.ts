/**
 * The first start of an empty store: the runner mints the account's first management key and shows it here,
 * once, on stdout (never in the log), with the command that turns it into a regular key for applications.
 */

import { cliCommand } from './cli-command'

const RULE = '-'.repeat(72)

/** The block printed once after the first management key was minted. `apiUrl` ends in the base path. */
export const formatFirstManagementKey = (rawKey: string, apiUrl: string): string =>
  [
    RULE,
    'modelgate: this store had no management key, so one was created. It is shown only this once',
    '(only its SHA-256 hash is stored); keep it somewhere safe:',
    '',
    `    ${rawKey}`,
    '',
    'Create a regular key for your applications (it answers with {"key": "mg-v1-..."}):',
    '',
    `    curl -X POST ${apiUrl}/keys \\`,
    `      -H 'Authorization: Bearer ${rawKey}' \\`,
    `      -H 'Content-Type: application/json' -d '{"name":"my-app"}'`,
    '',
    `Lost it? Run (beside the running gateway): ${cliCommand('keys create --management')}`,
    RULE,
    '',
  ].join('\n')
