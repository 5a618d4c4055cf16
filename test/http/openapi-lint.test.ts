import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../e2e/server-process.ts'
import { createTestApp, type TestContext } from '../helpers/test-app.ts'

/**
 * `/openapi.json` under Redocly's recommended rules (issue 23 item 8, decision 036): the live
 * document is written to a file and linted by the CLI the repository installs, from the repository
 * root so it reads redocly.yaml. The only rules off are the ones the decision lists.
 */

const REDOCLY = join(REPO_ROOT, 'node_modules/@redocly/cli/bin/cli.js')
const run = promisify(execFile)

/** Rules redocly.yaml turns off, each with its reason there and in decision 036. */
const RULES_OFF = ['info-license']

type Problem = { ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }
type LintReport = { totals: { errors: number; warnings: number; ignored: number }; problems: Problem[] }

let ctx: TestContext
let dir: string

beforeAll(async () => {
  ctx = await createTestApp()
  dir = mkdtempSync(join(tmpdir(), 'parley-openapi-lint-'))
})
afterAll(async () => {
  await ctx.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Lints a document with the repository's redocly.yaml (or another config) and returns the JSON report. */
async function lint(document: unknown, name: string, config = join(REPO_ROOT, 'redocly.yaml')): Promise<LintReport> {
  const file = join(dir, `${name}.json`)
  writeFileSync(file, JSON.stringify(document, null, 2))
  // Exit status 1 when there are errors; the report is on stdout either way.
  const result = await run(process.execPath, [REDOCLY, 'lint', '--format=json', `--config=${config}`, file], {
    cwd: REPO_ROOT,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? '', stderr: error.stderr ?? '' }))
  const json = result.stdout.slice(result.stdout.indexOf('{'))
  return JSON.parse(json) as LintReport
}

const summary = (report: LintReport) => report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`).join('\n')

describe('/openapi.json under redocly lint (recommended rules)', () => {
  it('has no problem, errors or warnings', async () => {
    const document = (await ctx.app.inject({ url: '/openapi.json' })).json()
    const report = await lint(document, 'openapi')
    expect(summary(report)).toBe('')
    expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 })
  })

  it('turns off only the rules decision 036 lists', () => {
    const config = readFileSync(join(REPO_ROOT, 'redocly.yaml'), 'utf8')
    const off = [...config.matchAll(/^\s+([a-z0-9-]+):\s*off\s*$/gm)].map((m) => m[1])
    expect(off).toEqual(RULES_OFF)
    const decision = readFileSync(join(REPO_ROOT, 'docs/decisions/036-openapi-lint.md'), 'utf8')
    for (const rule of RULES_OFF) expect(decision).toContain(`\`${rule}\``)
  })

  it('reports what the issue found, so a clean report means something: an inline oneOf under a discriminator, an operation without a 4XX, an unused component', async () => {
    const document = (await ctx.app.inject({ url: '/openapi.json' })).json()
    const broken = structuredClone(document)
    broken.components.schemas.SubmittedPart.oneOf[0] = broken.components.schemas.PromptPart
    for (const status of Object.keys(broken.paths['/healthz'].get.responses)) if (status.startsWith('4')) delete broken.paths['/healthz'].get.responses[status]
    broken.components.schemas.Unused = { type: 'object' }
    const report = await lint(broken, 'broken')
    const found = report.problems.map((p) => `${p.ruleId} ${p.location[0]?.pointer}`)
    expect(found).toEqual(
      expect.arrayContaining([
        'no-illogical-composition-keywords #/components/schemas/SubmittedPart/oneOf/0',
        'operation-4xx-response #/paths/~1healthz/get/responses',
        'no-unused-components #/components/schemas/Unused',
      ]),
    )
    expect(found).toHaveLength(3)
  })
})
