#!/usr/bin/env bash
# What an application gets from `npm install modelgate`: from a clean clone of this repository's HEAD, `npm pack`
# (whose prepack step builds dist/) must yield a tarball with dist/ in it, and a scratch app that installs that
# tarball must be able to `import { createGateway } from 'modelgate'`, run the `modelgate` binary, and serve a
# request. Run it before a release: `npm run pack:check` (a few minutes: it installs twice, from npm's cache when
# it can). It is a script rather than a test because installing reaches the package registry.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/modelgate-pack-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "pack-check: cloning $(git -C "$repo" rev-parse --short HEAD) into $work/clone"
git clone --quiet --no-local "$repo" "$work/clone"
cd "$work/clone"
npm ci --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null
before="$(git status --porcelain)"
tarball="$(npm pack --silent --pack-destination "$work" | tail -n 1)"
[ -n "$before" ] && { echo "pack-check: npm ci changed the clone:"; echo "$before"; exit 1; }
echo "pack-check: packed $tarball"

listing="$(tar -tzf "$work/$tarball")"
for file in package/dist/index.js package/dist/index.d.ts package/dist/cli.js package/dist/testing.js package/README.md package/LICENSE; do
  grep -qx "$file" <<<"$listing" || { echo "pack-check: $file is missing from the tarball"; exit 1; }
done
if grep -q '^package/src/' <<<"$listing"; then echo "pack-check: the tarball carries src/"; exit 1; fi

mkdir "$work/app" && cd "$work/app"
printf '{ "name": "scratch-app", "private": true, "type": "module" }\n' > package.json
npm install --no-audit --no-fund --prefer-offline --loglevel=error "$work/$tarball" >/dev/null
cat > check.mjs <<'JS'
import { createGateway } from 'modelgate'
import { memoryStorage } from 'modelgate/storage/memory'
const gateway = createGateway({ storage: memoryStorage(), logger: false })
const response = await gateway.fetch(new Request('http://127.0.0.1/api/v1/health'))
if (response.status !== 200) throw new Error(`GET /api/v1/health answered ${response.status}`)
await gateway.close()
console.log('pack-check: import { createGateway } from "modelgate" serves /api/v1/health')
JS
node check.mjs
version="$(npx --no-install modelgate --version)"
echo "pack-check: npx modelgate --version prints $version"
echo "pack-check: ok"
