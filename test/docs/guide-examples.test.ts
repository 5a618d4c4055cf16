import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, startServer, type ServerProcess } from '../e2e/server-process.ts'
import { machineCeiling, machineTimeout } from '../helpers/machine-timeouts.ts'
import { jsonMismatches, parseFrames, streamMismatches } from './match-answer.ts'
import { runnableExamples, type RunnableExample } from './runnable-blocks.ts'

/**
 * Every `sh runnable` example of docs/guide/*.md, run with bash against the real server started as
 * `npm start` starts it (its embedded defaults, the dev organisation's key from DATA_DIR), in the
 * order a reader follows them: the examples of a page share one shell, so a variable set by one
 * (`CHAT`, `RUN`) is there for the next. Each must answer what the page says it answers. Pages keep
 * to chats and namespaces of their own, so they run side by side (the admin command line's start
 * alone takes seconds).
 */
const GUIDE = join(REPO_ROOT, 'docs/guide')
const pages = readdirSync(GUIDE)
  .filter((name) => name.endsWith('.md'))
  .sort()
  .map((name) => ({ name, examples: runnableExamples(name, readFileSync(join(GUIDE, name), 'utf8')) }))

/**
 * The repository's README has runnable examples too (its context-management example, issue 23).
 * They run once the guide's pages are done: the README works in `acme/support`, whose chats the
 * chats-and-ledger page lists.
 */
const readme = { name: 'README.md of the repository', examples: runnableExamples('README.md', readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')) }

/**
 * A venv with the guide's Python requirements (docs/guide/requirements.txt), made once under
 * node_modules/.cache and made again when the requirements change; its bin directory.
 */
function pythonWithGuideRequirements(): string {
  const requirements = readFileSync(join(GUIDE, 'requirements.txt'), 'utf8')
  const venv = join(REPO_ROOT, 'node_modules/.cache/parley-guide-python')
  const stamp = join(venv, 'requirements.txt')
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== requirements) {
    rmSync(venv, { recursive: true, force: true })
    const made = spawnSync('sh', ['-c', `python3 -m venv "${venv}" && "${venv}/bin/pip" install -q -r "${join(GUIDE, 'requirements.txt')}"`], { encoding: 'utf8', timeout: 180_000 })
    if (made.status !== 0) throw new Error(`could not install the guide's Python requirements: ${made.stderr}`)
    writeFileSync(stamp, requirements)
  }
  return join(venv, 'bin')
}

type Outcome = { stdout: string; stderr: string; exitCode: number; statuses: number[] }

/**
 * Runs a page's examples in one bash, each sourced in turn with its output in files of its own.
 * `curl` is wrapped to note each answer's status in the example's status file; the reader's curl
 * prints nothing more.
 */
async function runPage(examples: RunnableExample[], env: Record<string, string>): Promise<Outcome[]> {
  const work = mkdtempSync(join(tmpdir(), 'parley-guide-'))
  try {
    const driver = ['set -u', `curl() { command curl -w '%{stderr}%{http_code}\\n' "$@" 2>>"$STATUS_FILE"; }`]
    examples.forEach((example, i) => {
      writeFileSync(join(work, `${i}.sh`), `${example.script}\n`)
      driver.push(`STATUS_FILE=${work}/${i}.status; : > "$STATUS_FILE"`, `{ source ${work}/${i}.sh; } > ${work}/${i}.out 2> ${work}/${i}.err; echo $? > ${work}/${i}.rc`)
    })
    driver.push('wait')
    await new Promise<void>((resolve, reject) => {
      const child = spawn('bash', ['-c', driver.join('\n')], { cwd: REPO_ROOT, env, stdio: 'ignore' })
      // Every page runs at once, each a few dozen node and python processes on a shared machine.
      const timer = setTimeout(() => child.kill('SIGKILL'), machineTimeout(90_000))
      child.once('error', reject)
      child.once('exit', () => {
        clearTimeout(timer)
        resolve()
      })
    })
    const read = (i: number, ext: string) => readFileSync(join(work, `${i}.${ext}`), 'utf8')
    return examples.map((_, i) => ({
      stdout: read(i, 'out'),
      stderr: read(i, 'err'),
      exitCode: Number(read(i, 'rc').trim()),
      statuses: read(i, 'status').split('\n').filter(Boolean).map(Number),
    }))
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

function problemsOf(example: RunnableExample, outcome: Outcome): string[] {
  const problems: string[] = []
  if (outcome.exitCode !== 0) problems.push(`exited ${outcome.exitCode}: ${outcome.stderr.trim()}`)
  const answer = example.answer
  // An example with no answer shown is checked by its statuses alone, so it must make a request.
  if (answer === null && outcome.statuses.length === 0) problems.push('made no HTTP request and shows no answer')
  const expectedStatus = answer?.status ?? null
  const unexpected = outcome.statuses.filter((s) => (s < 200 || s >= 300) && s !== expectedStatus)
  if (unexpected.length > 0) problems.push(`answered ${unexpected.join(', ')}`)
  if (expectedStatus !== null && !outcome.statuses.includes(expectedStatus)) problems.push(`never answered ${expectedStatus} (got ${outcome.statuses.join(', ')})`)
  if (answer?.format === 'json') {
    let actual: unknown
    try {
      actual = JSON.parse(outcome.stdout)
    } catch {
      problems.push(`printed no JSON document: ${outcome.stdout.slice(0, 500)}`)
      return problems
    }
    problems.push(...jsonMismatches(JSON.parse(answer.body), actual))
  }
  if (answer?.format === 'stream') problems.push(...streamMismatches(answer.body, parseFrames(outcome.stdout)))
  return problems
}

describe('the guide’s runnable examples', () => {
  let server: ServerProcess
  let dataDir: string
  const outcomes = new Map<string, Promise<Outcome[] | Error>>()

  beforeAll(async () => {
    for (const tool of ['bash', 'curl', 'jq', 'python3']) {
      if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`the guide's examples need ${tool} on the PATH`)
    }
    const python = pythonWithGuideRequirements()
    dataDir = mkdtempSync(join(tmpdir(), 'parley-guide-data-'))
    server = await startServer({ env: { DATA_DIR: dataDir } })
    const key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    // The Python examples' packages (docs/guide/requirements.txt) come first on the PATH, as a reader's venv would.
    const env = { PATH: `${python}:${process.env.PATH ?? ''}`, HOME: process.env.HOME ?? '', DATA_DIR: dataDir, KEY: key, API: server.url }
    for (const page of pages) outcomes.set(page.name, runPage(page.examples, env).catch((error: Error) => error))
    const guideDone = Promise.all(outcomes.values())
    outcomes.set(readme.name, guideDone.then(() => runPage(readme.examples, env)).catch((error: Error) => error))
  })

  afterAll(async () => {
    await server?.stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  it('every page of the guide has runnable examples, each followed by its answer or meant to answer 2xx', () => {
    const concept = pages.filter((page) => page.name !== 'README.md')
    expect(concept.length).toBeGreaterThanOrEqual(9)
    for (const page of concept) expect(page.examples.length, page.name).toBeGreaterThan(0)
  })

  it('the README has runnable examples: its context-management example, in acme/support', () => {
    expect(readme.examples.length).toBeGreaterThan(0)
    expect(readme.examples.some((example) => example.script.includes('"namespace":"acme/support"') && example.answer !== null)).toBe(true)
  })

  it('the repository README.md: each example answers as it says', { timeout: machineCeiling(240_000) }, async () => {
    const ran = await outcomes.get(readme.name)!
    if (ran instanceof Error) throw ran
    const report = readme.examples.flatMap((example, i) => {
      const problems = problemsOf(example, ran[i]!)
      return problems.length === 0 ? [] : [`README.md:${example.line}\n  ${problems.join('\n  ')}`]
    })
    expect(report.join('\n\n')).toBe('')
  })

  for (const page of pages.filter((p) => p.examples.length > 0)) {
    it(`${page.name}: each example answers as the page says`, { timeout: machineCeiling(120_000) }, async () => {
      const ran = await outcomes.get(page.name)!
      if (ran instanceof Error) throw ran
      const report = page.examples.flatMap((example, i) => {
        const problems = problemsOf(example, ran[i]!)
        return problems.length === 0 ? [] : [`docs/guide/${page.name}:${example.line}\n  ${problems.join('\n  ')}`]
      })
      expect(report.join('\n\n')).toBe('')
    })
  }
})
