/** The CLI's `--help`: commands, options, every environment variable the runner reads, and examples. */

import { ENVIRONMENT } from './config'

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

/** What each variable does, for the help text; a variable without an entry still appears, with its setting. */
const DESCRIPTIONS: Partial<Record<keyof typeof ENVIRONMENT, string>> = {
  PORT: 'port to listen on (MODELGATE_PORT wins; default 8787)',
  MODELGATE_HOST: 'address to listen on (default 127.0.0.1)',
  MODELGATE_BASE_PATH: 'prefix of every route (default /api/v1)',
  MODELGATE_STORAGE: 'sqlite (default: <data dir>/modelgate.db), sqlite:<path>, memory, redis://…, postgres://…, mysql://…, file (earlier versions\' embedded store)',
  MODELGATE_REDIS_PREFIX: 'key prefix on Redis (default modelgate:)',
  MODELGATE_SQL_SCHEMA: 'PostgreSQL schema or MySQL database for the tables',
  MODELGATE_RATE_LIMIT_REQUESTS: 'requests per key per window (default: no limit)',
  MODELGATE_RATE_LIMIT_WINDOW_SECONDS: 'rate-limit window (default 60)',
  MODELGATE_ENFORCE_CREDITS: '1: refuse (402) requests of accounts whose granted credits are used up (default: only counted)',
  MODELGATE_DATA_DIR: 'data directory: the SQLite store, the --dev key (default .modelgate)',
  MODELGATE_LEDGER: 'off: keep no usage records (GET /generation 404, GET /activity empty; limits and credits still count)',
  MODELGATE_LEDGER_RETENTION_DAYS: 'days usage records are kept (default 30)',
  MODELGATE_BODY_LIMIT: 'request body limit in bytes of routes other than model requests (default 1048576)',
  MODELGATE_INFERENCE_BODY_LIMIT: 'body limit in bytes of /responses, /chat/completions, /messages, /embeddings (default 20971520)',
  MODELGATE_REQUEST_BODY_TIMEOUT_MS: 'time a request body may take to arrive (default 30000; then 408)',
  MODELGATE_REQUEST_TIMEOUT_MS: "a request's deadline, all its fallback attempts, tool turns and fusion runs together (default 600000; then 524)",
  MODELGATE_SPEND_LEASE_MS: "a spend hold's lease, renewed while its request runs; a dead process's holds return within 1.5 leases (default 60000)",
  MODELGATE_READ_CACHE: 'off: read keys, accounts, workspaces and the like from the store on every request (default on)',
  MODELGATE_LOG_LEVEL: 'debug, info (default), warn or error',
  MODELGATE_MANAGEMENT_KEY: 'a management key ensured at start (16 to 512 characters)',
  MODELGATE_ENCRYPTION_KEYS: 'master keys for BYOK secrets, comma-separated, primary first',
  MODELGATE_DEV: '1: development mode, as --dev',
  MODELGATE_DEMO_MODELS: '1: serve the free demo models demo/chat, demo/tools, demo/reasoning (no provider key; default: on with --dev only; 0: off)',
  MODELGATE_SHUTDOWN_GRACE_SECONDS: 'time in-flight requests get on shutdown (default 10)',
  MODELGATE_WORKERS: 'worker processes on one port, or auto (one per core); default 1, as --workers',
  MODELGATE_WATCH_PARENT: '1: stop when the parent process exits (default: on under npm and npx)',
}

const PROVIDER_VARIABLES = `  MODELGATE_PROVIDER_<ID>_API_KEY, _BASE_URL, _API, _KEYLESS=1, _MODELS
                                a provider from the environment (<ID> upper-case, - as _); _MODELS lists
                                its models: <author>/<name>=<upstream model id>,…
  OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, GROQ_API_KEY, …
                                shared keys of built-in providers
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

const environmentSection = (): string => {
  const lines = Object.entries(ENVIRONMENT)
    // PORT is described with MODELGATE_PORT; MODELGATE_ENCRYPTION_KEY is the singular spelling of the list.
    .filter(([name]) => name !== 'MODELGATE_PORT' && name !== 'MODELGATE_ENCRYPTION_KEY')
    .map(([name, setting]) => {
      const label = name === 'PORT' ? 'MODELGATE_PORT, PORT' : name
      const description = DESCRIPTIONS[name as keyof typeof ENVIRONMENT] ?? `the ${setting} setting`
      return label.length < 29 ? `  ${label.padEnd(30)}${description}` : `  ${label}\n  ${' '.repeat(30)}${description}`
    })
  return `Environment (flags win over environment variables, which win over the config file):\n  ${'MODELGATE_CONFIG'.padEnd(30)}JSON config file\n${lines.join('\n')}\n${PROVIDER_VARIABLES}`
}

/** The full help text. */
export const usage = (): string => `${COMMANDS}\n${environmentSection()}\n${EXAMPLES}`
