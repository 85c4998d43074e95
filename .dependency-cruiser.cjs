/**
 * The layering of src/, as docs/architecture.md describes it: one rule per arrow that must not exist.
 * Checked by test/unit/architecture.test.ts (so `npm test` and CI enforce it), or by hand with
 * `npx depcruise src --config .dependency-cruiser.cjs`.
 */

// Code that runs on every host (Node, Bun, Deno, workers): only web APIs, no Node built-ins.
const PORTABLE =
  '^src/(core|pipeline|routes|ledger|engine|features|formats|providers|services|repositories|interns|admin|gateway|testing|dashboard)/|^src/transport/(contract|idle-watch)\\.ts$'

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other, even for types only, cannot be understood or moved one at a time.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'kernel-is-a-leaf',
      severity: 'error',
      comment: 'src/core (errors, body, router, crypto, JSON and event replies, validation) imports nothing of ours outside it.',
      from: { path: '^src/core/' },
      to: { path: '^src/', pathNot: '^src/core/' },
    },
    {
      name: 'portable-code-uses-no-node-builtins',
      severity: 'error',
      comment: 'Only the edges (transport, storage drivers, host adapters, the CLI) may use node:*.',
      from: { path: PORTABLE },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'providers-know-only-their-contract',
      severity: 'error',
      comment: 'Adapters translate wire formats: the provider contract, its canonical types and the kernel, nothing else.',
      from: { path: '^src/providers/' },
      to: { path: '^src/', pathNot: '^src/(providers|core)/' },
    },
    {
      name: 'providers-are-known-by-their-adapters',
      comment:
        'A provider\'s facts are capabilities its adapter declares (src/providers/contract.ts): outside src/providers/, nothing imports a ' +
        'provider\'s own folder but the code all adapters share (src/providers/shared/) and Anthropic\'s wire names, which the ' +
        'Anthropic Messages format the gateway serves inbound (src/formats/messages/) speaks too.',
      from: { path: '^src/', pathNot: '^src/providers/' },
      to: { path: '^src/providers/[^/]+/', pathNot: '^src/providers/(shared/|anthropic/wire\\.ts$)' },
    },
    {
      name: 'storage-knows-only-the-kernel',
      severity: 'error',
      from: { path: '^src/storage/' },
      to: { path: '^src/', pathNot: '^src/(storage|core)/' },
    },
    {
      name: 'storage-reached-through-its-contract',
      severity: 'error',
      comment:
        'Above the storage layer only the contract is known; the composition root picks the default driver, the CLI the configured one, ' +
        'the testing kit the memory store.',
      from: { path: '^src/', pathNot: '^src/(storage|gateway|cli|testing)/|^src/index\\.ts$' },
      to: { path: '^src/storage/', pathNot: '^src/storage/contract\\.ts$' },
    },
    {
      name: 'repositories-sit-on-storage',
      severity: 'error',
      from: { path: '^src/repositories/' },
      to: { path: '^src/', pathNot: '^src/(repositories|core)/|^src/storage/contract\\.ts$' },
    },
    {
      name: 'services-sit-on-repositories',
      severity: 'error',
      comment: 'Domain rules over repositories (accounts, keys, BYOK): no engine, no HTTP.',
      from: { path: '^src/services/' },
      to: { path: '^src/(engine|features|formats|interns|ledger|pipeline|routes|admin|gateway|cli|adapters|transport)/' },
    },
    {
      name: 'engine-knows-no-http-layer',
      severity: 'error',
      comment:
        'The engine decides answers; routes, the pipeline and the composition root call it, never the reverse. ' +
        'It calls upstreams through the transport contract only. One documented exception (docs/architecture.md): destination.ts ' +
        'loads the system resolver lazily where no resolver was configured.',
      from: { path: '^src/(engine|features)/' },
      to: {
        path: '^src/(routes|pipeline|ledger|admin|gateway|cli|adapters|transport)/',
        pathNot: '^src/transport/(system-resolver|contract)\\.ts$',
      },
    },
    {
      name: 'the-engine-kernel-never-imports-a-feature',
      severity: 'error',
      comment:
        'Features (src/features: plugins, routers and fusion, server tools, guardrails) import the engine kernel and are registered at ' +
        'the composition root (plan, turn and run stages, settings); they keep their state on a request under slots of their own. ' +
        'The kernel never names one, not even for a type.',
      from: { path: '^src/engine/' },
      to: { path: '^src/features/' },
    },
    {
      name: 'ledger-observes-answers',
      severity: 'error',
      comment:
        'The usage ledger records what the engine answered: it knows the engine, services and repositories; the pipeline, routes ' +
        'and the composition root write through it, never the reverse.',
      from: { path: '^src/ledger/' },
      to: { path: '^src/(routes|pipeline|admin|gateway|cli|adapters|transport|interns|formats)/' },
    },
    {
      name: 'engine-knows-no-interns',
      severity: 'error',
      comment: 'Interns run turns through the engine; the intern settings are built beside the inference service, not in it.',
      from: { path: '^src/(engine|features)/' },
      to: { path: '^src/interns/' },
    },
    {
      name: 'engine-knows-no-wire-format',
      severity: 'error',
      comment:
        'The engine yields typed events; each wire format (src/formats/) reads its requests into the engine\'s and writes the events ' +
        'back out (JSON or SSE), never the reverse.',
      from: { path: '^src/(engine|features)/' },
      to: { path: '^src/formats/' },
    },
    {
      name: 'formats-translate-and-encode-only',
      severity: 'error',
      comment:
        "A wire format knows the engine's request, events and results, the canonical types, the kernel and the plugin schemas its " +
        'request accepts: no routes, pipeline, storage or upstream calls.',
      from: { path: '^src/formats/' },
      to: { path: '^src/', pathNot: '^src/(formats|engine|providers|core)/|^src/features/plugins/schemas\\.ts$' },
    },
    {
      name: 'interns-use-the-engine-not-the-http-layer',
      severity: 'error',
      from: { path: '^src/interns/' },
      to: { path: '^src/(routes|pipeline|admin|gateway|cli|adapters|transport)/' },
    },
    {
      name: 'pipeline-is-below-routes',
      severity: 'error',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/(routes|admin|gateway|cli|adapters|transport)/' },
    },
    {
      name: 'routes-are-assembled-by-the-root',
      severity: 'error',
      comment: 'Only the composition root (and the admin API, which shares their schemas) imports routes.',
      from: { path: '^src/', pathNot: '^src/(routes|gateway|admin)/' },
      to: { path: '^src/routes/' },
    },
    {
      name: 'composition-root-is-imported-only-at-the-edge',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(gateway|cli|adapters|testing)/|^src/index\\.ts$' },
      to: { path: '^src/gateway/' },
    },
    {
      name: 'host-adapters-are-thin-edges',
      severity: 'error',
      comment: 'Adapters know the kernel and the gateway they mount, and nothing is built on them but the CLI.',
      from: { path: '^src/adapters/' },
      to: { path: '^src/', pathNot: '^src/(adapters|core|gateway)/' },
    },
    {
      name: 'workers-run-portable-work',
      severity: 'error',
      comment:
        'src/workers (Node-only worker threads) runs engine work off the main thread: the kernel, the PDF text reader, the HTML page reader and the semantic cache\'s comparison, nothing with state.',
      from: { path: '^src/workers/' },
      to: { path: '^src/', pathNot: '^src/(workers|core)/|^src/features/plugins/pdf-text\\.ts$|^src/features/server-tools/page-text\\.ts$|^src/features/response-cache/nearest\\.ts$' },
    },
    {
      name: 'only-the-root-starts-workers',
      severity: 'error',
      comment: 'The composition root loads the worker pool lazily (docs/architecture.md, known exceptions); nothing else knows it.',
      from: { path: '^src/', pathNot: '^src/(workers|gateway)/' },
      to: { path: '^src/workers/' },
    },
    {
      name: 'the-dashboard-is-a-page',
      severity: 'error',
      comment: 'The operator\'s page (src/dashboard/) holds no state and no data: it knows the kernel only, and reads the API from the browser.',
      from: { path: '^src/dashboard/' },
      to: { path: '^src/', pathNot: '^src/(dashboard|core)/' },
    },
    {
      name: 'only-the-root-serves-the-dashboard',
      severity: 'error',
      comment: 'The composition root serves the page; the runner only names its default path.',
      from: { path: '^src/', pathNot: '^src/(dashboard|gateway|cli)/' },
      to: { path: '^src/dashboard/' },
    },
    {
      name: 'metrics-observe-the-telemetry',
      severity: 'error',
      comment:
        'The Prometheus exporter (src/metrics/, Node-only: prom-client and node:perf_hooks) observes the kernel\'s telemetry events and ' +
        'knows nothing else; only the runner imports it (hosts import modelgate/metrics), so the portable library never loads prom-client.',
      from: { path: '^src/metrics/' },
      to: { path: '^src/', pathNot: '^src/(metrics|core)/' },
    },
    {
      name: 'only-the-cli-loads-the-exporters',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(metrics|cli)/' },
      to: { path: '^src/metrics/|node_modules/prom-client/' },
    },
    {
      name: 'only-the-cli-mounts-adapters',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(adapters|cli)/' },
      to: { path: '^src/adapters/' },
    },
    {
      name: 'nothing-imports-the-cli',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'nothing-imports-the-testing-kit',
      severity: 'error',
      comment:
        'modelgate/testing is an entry point for users\' tests: the gateway never depends on it, except that the composition root\'s ' +
        'demo models (src/gateway/demo-models.ts) play their scripts on the kit\'s scripted provider (its script, adapter, wire format ' +
        'and transport, which know only the provider contract, the transport contract and the kernel).',
      from: { path: '^src/', pathNot: '^src/testing/|^src/gateway/demo-models\\.ts$' },
      to: { path: '^src/testing/' },
    },
    {
      name: 'demo-models-use-only-the-scripted-provider',
      severity: 'error',
      comment: 'The demo models take the scripted provider from the testing kit, never the test gateway (which is built on the composition root).',
      from: { path: '^src/gateway/demo-models\\.ts$' },
      to: { path: '^src/testing/', pathNot: '^src/testing/(script|scripted-adapter|scripted-provider|scripted-transport|wire)\\.ts$' },
    },
    {
      name: 'the-scripted-adapter-is-an-ordinary-adapter',
      severity: 'error',
      comment: 'The scripted provider\'s adapter and wire format obey the providers\' rule, so they prove the contract alone suffices.',
      from: { path: '^src/testing/(scripted-adapter|script|wire)\\.ts$' },
      to: { path: '^src/', pathNot: '^src/(providers|core)/|^src/testing/(script|wire)\\.ts$' },
    },
    {
      name: 'transports-know-only-their-contract',
      severity: 'error',
      comment: 'A transport knows its contract (src/transport/contract.ts, with the idle watch every transport shares), the request type it carries and the kernel.',
      from: { path: '^src/transport/' },
      to: { path: '^src/', pathNot: '^src/(transport|core)/|^src/providers/contract\\.ts$' },
    },
    {
      name: 'client-libraries-stay-in-their-driver',
      severity: 'error',
      comment:
        'Importing modelgate/adapters/express must never load ioredis: each client library lives in one driver (libsql in ' +
        'storage/sql/sqlite.ts, beside the other SQL clients).',
      from: { path: '^src/', pathNot: '^src/storage/(redis\\.ts|sql/|unstorage\\.ts)|^src/transport/' },
      to: { path: 'node_modules/(ioredis|postgres|mysql2|libsql|unstorage|undici)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|test|bench|examples)/' },
  },
}
