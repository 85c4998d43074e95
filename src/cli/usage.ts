/** The CLI's `--help`: commands, options, every environment variable the runner reads, and examples. */

import { PROVIDER_VARIABLES, RUNNER_VARIABLES, providerKeyVariables } from './variables'

const COMMANDS = `Usage: modelgate <command> [options]

Commands:
  serve                         Start the gateway (default store: SQLite, ./.modelgate/modelgate.db)
  keys create                   Create an API key; prints the raw key once, alone on stdout
      --management              a management key (default: a regular key)
      --name <name>             key name
      --account <id|slug>       account (default: the default account)
      --workspace <id|slug>     workspace (default: the account's default workspace)
      --user <id>               the user the key acts for, as BYOK allowed_user_ids name it (default: the account's owner)
  keys list [--account <id|slug>] [--all]
                                List keys: hash prefix, label, kind, name, disabled (never raw keys);
                                --all includes disabled keys
  keys revoke <hash|prefix> [--account <id|slug>]
                                Disable a key at once (8 or more hex characters of its hash)
  accounts create --slug <slug> [--name <name>] [--interns]
  accounts flags [--account <id|slug>] --interns | --no-interns
  credits grant <usd> [--account <id|slug>] [--note <text>]
                                Grant an account credits; each grant is kept as a record. A negative
                                amount takes some back: credits grant -- -2.50. Enforced only with
                                MODELGATE_ENFORCE_CREDITS=1
  credits show [--account <id|slug>]
                                Credits granted and used, and every grant
  byok reencrypt                Re-seal BYOK keys with the first of MODELGATE_ENCRYPTION_KEYS
  secrets generate-key          Print a new random encryption key (base64)
  backup <file>                 Copy the SQLite store to <file> (a new file), while gateways use it

Options:
  --config <file>               JSON config file (also MODELGATE_CONFIG); keys as the settings below
  --data-dir <dir>              data directory: the SQLite store, the --dev key (default .modelgate)
  --memory                      keep state in memory only (lost on exit)
  --dev                         development mode: generate and keep an encryption key in the data dir,
                                and serve the free demo models (demo/chat, demo/tools, demo/reasoning)
  --port <n> --host <h> --base-path <p> --log-level <debug|info|warn|error>   (serve)
  --workers <n|auto>            serve with n worker processes on one port, auto: one per core (serve;
                                default 1); more than one needs a store processes share: SQLite (the
                                default), PostgreSQL, MySQL/MariaDB or Redis
  -h, --help                    this text
  -v, --version                 the version

The SQLite store is shared by every process on the machine that opens it: the commands below work
while a gateway runs on the same data directory. On first start, an embedded store of an earlier
version (snapshot.jsonl, journal.jsonl) moves into it, and its files into file-store-backup-<time>/.
The embedded store itself (MODELGATE_STORAGE=file) belongs to one process at a time.
`

const EXAMPLES = `Examples:
  modelgate serve --dev                                   try it: prints a management key on first start
  modelgate secrets generate-key                          an encryption key: keep it in your secret store
  MODELGATE_STORAGE=redis://127.0.0.1:6379 MODELGATE_ENCRYPTION_KEYS=<that key> modelgate serve
  modelgate serve --workers auto                          every core, on the default SQLite store
  KEY=$(modelgate keys create --management --name ops)    capture a new key (from npm: npm run -s modelgate -- …)
  modelgate keys list --all
  modelgate keys revoke 3e7a9c21
  modelgate backup backups/modelgate-$(date +%F).db        a consistent copy of the store, taken live
  modelgate credits grant 25 --account acme --note "March invoice"
  MODELGATE_PROVIDER_MY_VLLM_API=openai-chat MODELGATE_PROVIDER_MY_VLLM_BASE_URL=http://127.0.0.1:8000/v1 \\
    MODELGATE_PROVIDER_MY_VLLM_KEYLESS=1 MODELGATE_PROVIDER_MY_VLLM_MODELS=meta/llama-local=meta-llama/Llama-3.1-8B-Instruct \\
    modelgate serve
`

const line = (label: string, description: string): string =>
  label.length < 29 ? `  ${label.padEnd(30)}${description}` : `  ${label}\n  ${' '.repeat(30)}${description}`

const environmentSection = (): string =>
  [
    'Environment (flags win over environment variables, which win over the config file; docs/configuration.md):',
    ...RUNNER_VARIABLES.map((variable) => line(variable.name, variable.description)),
    ...PROVIDER_VARIABLES.map((variable) => line(variable.name, variable.description)),
    line('', '<ID>: the provider id upper-cased, - as _ (my-vllm: MY_VLLM)'),
    ...providerKeyVariables().map(({ name, description }) => line(name, description)),
    '',
  ].join('\n')

/** The full help text. */
export const usage = (): string => `${COMMANDS}\n${environmentSection()}\n${EXAMPLES}`
