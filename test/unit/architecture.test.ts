/**
 * The layering rules of docs/architecture.md (written in .dependency-cruiser.cjs) hold for src/, and they are live:
 * the same rules find the arrows a throwaway tree breaks them with.
 */

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { cruise, type ICruiseResult, type IForbiddenRuleType } from 'dependency-cruiser'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '../..')
const config = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs')) as {
  forbidden: IForbiddenRuleType[]
  options: { tsPreCompilationDeps: boolean; doNotFollow: { path: string } }
}

/** Cruises `src` under `baseDir` with the repository's rules; returns each violation as `rule: from → to`. */
const violationsIn = async (baseDir: string): Promise<string[]> => {
  const previous = process.cwd()
  process.chdir(baseDir)
  try {
    const { output } = await cruise(['src'], {
      validate: true,
      ruleSet: { forbidden: config.forbidden },
      tsPreCompilationDeps: config.options.tsPreCompilationDeps,
      doNotFollow: config.options.doNotFollow,
    })
    return (output as ICruiseResult).summary.violations.map((violation) => `${violation.rule.name}: ${violation.from} → ${violation.to}`)
  } finally {
    process.chdir(previous)
  }
}

describe('architecture', () => {
  it('src/ keeps every layering rule', async () => {
    expect(await violationsIn(ROOT)).toEqual([])
  }, 60_000)

  it('the rules catch a kernel importing outward, Node built-ins in portable code, a provider importing the engine and a cycle', async () => {
    const base = await mkdtemp(join(tmpdir(), 'modelgate-architecture-'))
    const files: Record<string, string> = {
      'src/core/errors.ts': "import type { Runtime } from '../engine/runtime'\nexport type E = Runtime\n",
      'src/engine/runtime.ts': "import { readFileSync } from 'node:fs'\nexport type Runtime = typeof readFileSync\n",
      'src/providers/openai/index.ts': "import type { Runtime } from '../../engine/runtime'\nexport type P = Runtime\n",
      'src/routes/a.ts': "import { b } from './b'\nexport const a = () => b\n",
      'src/routes/b.ts': "import { a } from './a'\nexport const b = () => a\n",
    }
    try {
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(base, path)), { recursive: true })
        await writeFile(join(base, path), text)
      }
      const found = await violationsIn(base)
      expect(found).toEqual(
        expect.arrayContaining([
          'kernel-is-a-leaf: src/core/errors.ts → src/engine/runtime.ts',
          'portable-code-uses-no-node-builtins: src/engine/runtime.ts → fs',
          'providers-know-only-their-contract: src/providers/openai/index.ts → src/engine/runtime.ts',
          'no-circular: src/routes/a.ts → src/routes/b.ts',
        ]),
      )
    } finally {
      await rm(base, { recursive: true, force: true })
    }
  }, 60_000)

  it("the rules catch a provider's own folder imported outside src/providers/, and let the shared code through", async () => {
    const base = await mkdtemp(join(tmpdir(), 'modelgate-architecture-'))
    const files: Record<string, string> = {
      'src/providers/azure/credentials.ts': 'export const parse = (raw: string) => raw\n',
      'src/providers/shared/errors.ts': 'export const redact = (text: string) => text\n',
      'src/services/byok.ts': "import { parse } from '../providers/azure/credentials'\nexport const label = parse\n",
      'src/engine/attempts.ts': "import { redact } from '../providers/shared/errors'\nexport const hide = redact\n",
    }
    try {
      for (const [path, text] of Object.entries(files)) {
        await mkdir(dirname(join(base, path)), { recursive: true })
        await writeFile(join(base, path), text)
      }
      expect(await violationsIn(base)).toEqual(['providers-are-known-by-their-adapters: src/services/byok.ts → src/providers/azure/credentials.ts'])
    } finally {
      await rm(base, { recursive: true, force: true })
    }
  }, 60_000)
})
