import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { REPO_ROOT, runCommand, startServer, type CliResult, type ServerProcess } from '../e2e/server-process.ts'
import { fences } from '../docs/runnable-blocks.ts'

/**
 * The typed client as another project uses it (clients/typescript/README.md): `npm pack` in
 * clients/typescript (its prepack builds dist/), the tarball installed with npm into a new project
 * in the temporary directory, far from this repository's node_modules, so the package brings what it
 * imports itself. The README's tsconfig and its TypeScript examples are written there, compiled with
 * tsc against the installed package, and run with node against a live server; each must print what
 * the README shows under it.
 */
const CLIENT = join(REPO_ROOT, 'clients/typescript')
const README = readFileSync(join(CLIENT, 'README.md'), 'utf8')
const TSC = join(REPO_ROOT, 'node_modules/typescript/bin/tsc')
const TYPES_NODE_VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules/@types/node/package.json'), 'utf8')) as { version: string }).version

type Example = { file: string; line: number; source: string; output: string | null }

/** Fences `ts FILE.ts` are the examples, each followed by a `text output` fence: what it prints. */
function readmeExamples(): { tsconfig: string | null; examples: Example[] } {
  const all = fences(README)
  const tsconfig = all.find((fence) => fence.info === 'json tsconfig.json')?.body ?? null
  const examples = all.flatMap((fence, i) => {
    const [language, file] = fence.info.split(/\s+/)
    if (language !== 'ts' && language !== 'typescript') return []
    const next = all[i + 1]
    return [{ file: file ?? `example-${i}.ts`, line: fence.line, source: fence.body, output: next?.info === 'text output' ? next.body : null }]
  })
  return { tsconfig, examples }
}

type Ran = CliResult

/** Runs a command to its end (or kills it after `timeoutMs`, a ceiling for a stuck install, not a measure). */
const run = (command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Ran> =>
  runCommand(command, args, { ...options, timeoutMs: options.timeoutMs ?? 600_000 })

const describeRan = (what: string, ran: Ran) => `${what} exited ${ran.code}\nstdout: ${ran.stdout}\nstderr: ${ran.stderr}`

/**
 * npm's environment without what `npm test` sets for this repository's package (its prefix, its
 * package.json's fields), so the npm run here acts on the directory it is started in. The cache,
 * registry and user config stay.
 */
function npmEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env }
  for (const name of Object.keys(env)) {
    if (/^npm_(package_|lifecycle_)/i.test(name) || /^npm_(config_local_prefix|config_call|command)$/i.test(name)) delete env[name]
  }
  delete env.NODE_ENV
  return env
}

/** The package names that `from '…'` and `import('…')` of a built file name, other than relative paths and node: built-ins. */
function bareImports(source: string): string[] {
  const specifiers = [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]!)
  return specifiers
    .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!))
}

describe('the typed client from its tarball, in a project of its own', () => {
  const { tsconfig, examples } = readmeExamples()
  const work = mkdtempSync(join(tmpdir(), 'parley-client-package-'))
  const project = join(work, 'project')
  const dataDir = join(work, 'data')
  let packed: { filename: string; files: { path: string }[] } | undefined
  let server: ServerProcess | undefined
  let env: NodeJS.ProcessEnv = {}
  let compiled: Ran | undefined
  let outDir = ''

  beforeAll(async () => {
    // As the README says: npm pack in clients/typescript, which builds dist/ first (prepack).
    mkdirSync(join(work, 'tarball'))
    const pack = await run('npm', ['pack', '--json', '--pack-destination', join(work, 'tarball')], { cwd: CLIENT, env: npmEnv() })
    if (pack.code !== 0) throw new Error(describeRan('npm pack', pack))
    packed = (JSON.parse(pack.stdout) as (typeof packed)[])[0]!

    // A new project far from this repository's node_modules: the tarball and Node's types, from npm.
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'parley-client-consumer', private: true, type: 'module' }, null, 2)}\n`)
    const install = await run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, 'tarball', packed.filename), `@types/node@${TYPES_NODE_VERSION}`],
      { cwd: project, env: npmEnv() },
    )
    if (install.code !== 0) throw new Error(describeRan('npm install', install))

    if (tsconfig === null) throw new Error('clients/typescript/README.md shows no `json tsconfig.json` block')
    writeFileSync(join(project, 'tsconfig.json'), tsconfig)
    outDir = (JSON.parse(tsconfig) as { compilerOptions: { outDir: string } }).compilerOptions.outDir
    for (const example of examples) writeFileSync(join(project, example.file), `${example.source}\n`)
    // Not the README's: each line must be a type error, which it is not if the package's types
    // did not resolve (everything `any`), so the README's examples type-checking means something.
    writeFileSync(
      join(project, 'types-resolve.ts'),
      [
        "import { collectTurn, createParleyClient, type TurnEvent } from '@parley/client'",
        "const parley = createParleyClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'pk_x' })",
        'export async function unused(event: TurnEvent) {',
        '  // @ts-expect-error not an operation of the API',
        "  await parley.api.GET('/api/v1/no-such-route')",
        '  // @ts-expect-error a turn needs its model',
        "  await parley.turns.submit('chat', { input: [] })",
        "  // @ts-expect-error runId is a string",
        "  const runId: number = (await collectTurn(await parley.turns.submit('chat', { model: 'm', input: [] }))).runId",
        "  // @ts-expect-error no such event",
        "  if (event.event === 'no_such_event') return runId",
        '}',
        '',
      ].join('\n'),
    )
    compiled = await run(process.execPath, [TSC, '-p', join(project, 'tsconfig.json')], { cwd: project })

    server = await startServer({ env: { DATA_DIR: dataDir, NODE_ID: 'client-package' }, timeoutMs: 120_000 })
    const key = readFileSync(join(dataDir, 'dev-api-key.txt'), 'utf8').trim()
    env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PARLEY_URL: server.url, PARLEY_KEY: key }
  }, 900_000)

  afterAll(async () => {
    await server?.stop()
    rmSync(work, { recursive: true, force: true })
  })

  test('the README shows the tsconfig and its examples, each with what it prints', () => {
    expect(tsconfig).not.toBeNull()
    expect(examples.map((e) => e.file)).toEqual(expect.arrayContaining(['chat.ts', 'image.ts', 'retry.ts']))
    for (const example of examples) expect(example.output, `${example.file} (README line ${example.line}) has no \`text output\` block after it`).not.toBeNull()
  })

  test('the tarball holds the built ES modules with their declarations, and no sources', () => {
    const files = packed!.files.map((f) => f.path)
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/schema.d.ts']))
    expect(files.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md')).toEqual([])
    const installed = JSON.parse(readFileSync(join(project, 'node_modules/@parley/client/package.json'), 'utf8')) as Record<string, unknown>
    expect(installed).toMatchObject({ type: 'module', types: './dist/index.d.ts', engines: { node: '>=20.19' } })
    expect(installed.private).toBeUndefined()
  })

  test('every package the built files import is a dependency of the client’s own package.json', () => {
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@parley/client/package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
      peerDependencies?: Record<string, string>
    }
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})])
    const dist = join(project, 'node_modules/@parley/client/dist')
    const imported = new Set(readdirSync(dist).flatMap((name) => bareImports(readFileSync(join(dist, name), 'utf8'))))
    expect(imported).toContain('openapi-fetch')
    expect([...imported].filter((name) => !declared.has(name))).toEqual([])
  })

  test('the README’s examples compile with tsc against the installed package, its types resolved', () => {
    expect(compiled!.stdout + compiled!.stderr).toBe('')
    expect(compiled!.code).toBe(0)
  })

  for (const example of examples) {
    test(`${example.file} (README line ${example.line}) runs against a live server and prints what the README shows`, async () => {
      const script = join(project, outDir, example.file.replace(/\.ts$/, '.js'))
      const ran = await run(process.execPath, [script], { cwd: project, env })
      expect(ran.stderr).toBe('')
      expect(ran.code).toBe(0)
      expect(ran.stdout.trimEnd()).toBe(example.output?.trimEnd())
    })
  }
})
