/**
 * Summarises a V8 `.cpuprofile` (from `--cpu-prof` on the gateway process): self time per function,
 * mapped back to src/ through the build's source maps, and per area (modelgate, undici, Node, V8).
 */

import { existsSync, readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { basename, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}
interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const maps = new Map<string, SourceMap | null>()

const sourceMapFor = (url: string): SourceMap | null => {
  if (!maps.has(url)) {
    const file = `${fileURLToPath(url)}.map`
    maps.set(url, existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, 'utf8'))) : null)
  }
  return maps.get(url)!
}

const locate = (frame: CallFrame): string => {
  if (!frame.url) return ''
  if (!frame.url.startsWith('file:')) return `${frame.url}:${frame.lineNumber + 1}`
  const map = frame.url.includes('/node_modules/undici/') ? null : sourceMapFor(frame.url)
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number } | undefined
  if (entry?.originalSource) {
    const source = entry.originalSource.startsWith('file:') ? fileURLToPath(entry.originalSource) : entry.originalSource
    const inSource = source.lastIndexOf('/src/')
    return `${inSource >= 0 ? source.slice(inSource + 1) : relative(ROOT, source)}:${(entry.originalLine ?? 0) + 1}`
  }
  const path = fileURLToPath(frame.url)
  const inPackage = path.lastIndexOf('/node_modules/')
  return `${inPackage >= 0 ? path.slice(inPackage + 14) : basename(path)}:${frame.lineNumber + 1}`
}

const areaOf = (frame: CallFrame): string => {
  if (!frame.url) return frame.functionName.startsWith('(') ? frame.functionName : 'V8 / native (syscalls, builtins)'
  if (frame.url.startsWith('node:internal/deps/undici')) return "Node's bundled undici (fetch, Request, Headers, web streams)"
  if (frame.url.startsWith('node:')) return 'Node internals (node:*)'
  if (frame.url.startsWith('wasm:')) return 'undici llhttp (wasm)'
  if (frame.url.includes('/node_modules/undici/')) return 'undici (package)'
  // The gateway's bundle, wherever it was built: its source map leads back to src/.
  if (locate(frame).startsWith('src/')) return 'modelgate'
  if (frame.url.includes('/node_modules/')) return 'other packages'
  if (frame.url.includes('/bench/')) return 'bench harness'
  return 'other'
}

/** Prints the top `count` functions by self time, and self time per area. */
export const summarizeProfile = (file: string, count = 20): string => {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfMicros = new Map<number, number>()
  let total = 0
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + delta)
    total += delta
  })
  const byFunction = new Map<string, number>()
  const byArea = new Map<string, number>()
  for (const [id, micros] of selfMicros) {
    const frame = byId.get(id)!.callFrame
    if (frame.functionName === '(idle)') continue
    const key = `${frame.functionName || '(anonymous)'}  ${locate(frame)}`
    byFunction.set(key, (byFunction.get(key) ?? 0) + micros)
    byArea.set(areaOf(frame), (byArea.get(areaOf(frame)) ?? 0) + micros)
  }
  // Inclusive time of our own functions: a sample counts once for each of them on its stack.
  const parentOf = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
  const inclusive = new Map<string, number>()
  for (const [id, micros] of selfMicros) {
    const seen = new Set<string>()
    for (let current: number | undefined = id; current !== undefined; current = parentOf.get(current)) {
      const frame = byId.get(current)!.callFrame
      if (areaOf(frame) !== 'modelgate') continue
      const key = `${frame.functionName || '(anonymous)'}  ${locate(frame)}`
      if (seen.has(key)) continue
      seen.add(key)
      inclusive.set(key, (inclusive.get(key) ?? 0) + micros)
    }
  }
  const busy = [...byArea.values()].reduce((sum, micros) => sum + micros, 0)
  const share = (micros: number) => `${((100 * micros) / busy).toFixed(1).padStart(5)} %`
  const lines = [`CPU profile ${file}: ${(total / 1000).toFixed(0)} ms sampled, ${(busy / 1000).toFixed(0)} ms busy`, '', 'self time by area (share of busy time):']
  for (const [area, micros] of [...byArea].sort((a, b) => b[1] - a[1])) lines.push(`  ${share(micros)}  ${area}`)
  lines.push('', `top ${count} functions by self time:`)
  for (const [key, micros] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, count)) lines.push(`  ${share(micros)}  ${key}`)
  lines.push('', `top ${count} modelgate functions by inclusive time (synchronous stack only):`)
  for (const [key, micros] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, count)) lines.push(`  ${share(micros)}  ${key}`)
  return lines.join('\n')
}
