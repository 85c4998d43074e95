/**
 * Nothing unused stays: knip (configured in knip.json, whose entries are the package's exports, the runner, the
 * workers, the bench, the scripts, the examples and the tests) finds no unused file, dependency or export, and no
 * value exported twice under two names. An export kept for nobody is a contract nobody holds.
 */

import { execFile } from 'node:child_process'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '../..')
const KNIP = join(ROOT, 'node_modules', 'knip', 'bin', 'knip.js')

/** Knip's findings as `kind: name (file)`, one line each; empty when there are none. */
const findings = () =>
  new Promise<string[]>((done, fail) => {
    execFile(process.execPath, [KNIP, '--no-progress', '--reporter', 'json'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      // Knip exits 1 when it finds something: only output that is not its report is a failure to run.
      let report: { issues: Array<Record<string, unknown> & { file: string }> }
      try {
        report = JSON.parse(stdout)
      } catch {
        return fail(error ?? new Error(`knip printed no report: ${stderr}`))
      }
      const lines: string[] = []
      for (const issue of report.issues) {
        for (const [kind, found] of Object.entries(issue)) {
          const items = Array.isArray(found) ? found : found && typeof found === 'object' ? Object.values(found) : []
          for (const item of items as Array<{ name?: string } | Array<{ name?: string }>>) {
            const names = Array.isArray(item) ? item.map((entry) => entry.name).join('|') : item.name
            if (names) lines.push(`${kind}: ${names} (${issue.file})`)
          }
        }
      }
      done(lines)
    })
  })

describe('unused code', () => {
  it('knip finds no unused file, dependency or export', async () => {
    expect(await findings()).toEqual([])
  }, 120_000)
})
