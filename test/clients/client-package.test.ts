import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { REPO_ROOT, runCommand, startServer, type CliResult, type ServerProcess } from '../e2e/server-process.ts'
import { fences } from '../docs/runnable-blocks.ts'

/**
 * The typed client as another project uses it (clients/typescript/README.md, issue 38): `npm pack` in
 * clients/typescript (its prepack builds dist/: ES modules, and CommonJS in dist/cjs), the tarball
 * installed with npm into two new projects in the temporary directory, far from this repository's
 * node_modules, so the package brings what it imports itself:
 *
 * - a CommonJS project, made by `npm init -y` as the README says (npm's default);
 * - an ES module project, the same with `"type": "module"`.
 *
 * In each, the README's tsconfig and its TypeScript examples are written, compiled with tsc against
 * the installed package, and run with node against one live server; each must print what the README
 * shows under it. The installs work offline from npm's cache, as the root's `npm ci` filled it: the
 * tarball's dependencies and @types/node at the root's version (`--prefer-offline`). tsc is the
 * root's (the README installs `typescript` in the project; the compiler is the same).
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

async function mustRun(what: string, command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Ran> {
  const ran = await run(command, args, options)
  if (ran.code !== 0) throw new Error(describeRan(what, ran))
  return ran
}

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

/** The package names that `from '…'`, `import('…')` and `require('…')` of a built file name, other than relative paths and node: built-ins. */
function bareImports(source: string): string[] {
  const specifiers = [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm)].map((m) => m[1]!)
  return specifiers
    .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!))
}

/** Every file under `dir`, as paths relative to it. */
const filesUnder = (dir: string): string[] => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1))

/**
 * Not the README's: each line must be a type error, which it is not if the package's types did not
 * resolve (everything `any`), so the README's examples type-checking means something.
 */
const TYPES_RESOLVE = [
  "import { collectTurn, createParleyClient, type TurnEvent } from '@parley/client'",
  "const parley = createParleyClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'pk_x' })",
  'export async function unused(event: TurnEvent) {',
  '  // @ts-expect-error not an operation of the API',
  "  await parley.api.GET('/api/v1/no-such-route')",
  '  // @ts-expect-error a turn needs its model',
  "  await parley.turns.submit('chat', { input: [] })",
  '  // @ts-expect-error runId is a string',
  "  const runId: number = (await collectTurn(await parley.turns.submit('chat', { model: 'm', input: [] }))).runId",
  '  // @ts-expect-error no such event',
  "  if (event.event === 'no_such_event') return runId",
  '}',
  '',
].join('\n')

/**
 * A program of the client's API alone, compiled with no types but TypeScript's own libs (`types: []`,
 * so the installed @types/node is not loaded): the package's declarations are complete without it.
 * The `process` line proves Node's types really were left out.
 */
const CLIENT_ONLY = [
  "import { attachment, collectTurn, createParleyClient, ParleyApiError, unwrap, type TurnEvent } from '@parley/client'",
  '',
  'export async function clientOnly(): Promise<string> {',
  "  const parley = createParleyClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'pk_x', fetch: globalThis.fetch })",
  "  const chat = unwrap(await parley.api.POST('/api/v1/chats', { body: { title: 'types only' } }))",
  "  const media = attachment(new Uint8Array([137, 80, 78, 71]), 'image/png')",
  "  const turn = await parley.turns.submit(chat.id, { model: 'sandbox/echo', input: [{ type: 'prompt', text: 'hi', media: [media] }] })",
  '  for await (const event of turn) if (event.event === \'delta\') console.log(event.data.text)',
  "  const collected = await collectTurn(await parley.turns.submit(chat.id, { model: 'sandbox/echo', input: [] }))",
  '  const failure: unknown = collected.done',
  '  if (failure instanceof ParleyApiError) return failure.code',
  '  const first: TurnEvent | undefined = undefined',
  '  void first',
  '  // @ts-expect-error Node\'s types are not loaded here, so `process` is unknown',
  '  void process.env',
  '  return collected.done.stop_reason',
  '}',
  '',
].join('\n')

type ProjectKind = {
  kind: 'commonjs' | 'module'
  /** What the project's package.json says after `npm init -y` (and `npm pkg set`). */
  setup: string[][]
  /** The package's build each project's compiled examples load, and the declarations tsc reads for it. */
  build: string
  declarations: string
  /** How an example compiled in that project loads the package. */
  loads: RegExp
}

const KINDS: ProjectKind[] = [
  { kind: 'commonjs', setup: [['init', '-y']], build: 'dist/cjs/index.js', declarations: 'dist/cjs/index.d.ts', loads: /\brequire\("@parley\/client"\)/ },
  {
    kind: 'module',
    setup: [['init', '-y'], ['pkg', 'set', 'type=module']],
    build: 'dist/index.js',
    declarations: 'dist/index.d.ts',
    loads: /^import \{[^}]*\} from '@parley\/client';$/m,
  },
]

type Project = ProjectKind & { dir: string; manifest: { type?: string }; compiled: Ran; clientOnly: Ran; resolved: { require: string; import: string } }

describe('the typed client from its tarball, in a CommonJS project made by npm init -y and in an ES module one', () => {
  const { tsconfig, examples } = readmeExamples()
  const work = mkdtempSync(join(tmpdir(), 'parley-client-package-'))
  const dataDir = join(work, 'data')
  const projects = new Map<ProjectKind['kind'], Project>()
  let packed: { filename: string; files: { path: string }[] } | undefined
  let server: ServerProcess | undefined
  let env: NodeJS.ProcessEnv = {}
  let outDir = ''

  /** A new project as the README makes it, the tarball installed, the README's tsconfig and examples written and compiled. */
  async function makeProject(kind: ProjectKind): Promise<Project> {
    const dir = join(work, `${kind.kind}-project`)
    mkdirSync(dir)
    for (const args of kind.setup) await mustRun(`npm ${args.join(' ')}`, 'npm', args, { cwd: dir, env: npmEnv() })
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string }
    await mustRun(
      'npm install',
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, 'tarball', packed!.filename), `@types/node@${TYPES_NODE_VERSION}`],
      { cwd: dir, env: npmEnv() },
    )
    writeFileSync(join(dir, 'tsconfig.json'), tsconfig!)
    for (const example of examples) writeFileSync(join(dir, example.file), `${example.source}\n`)
    writeFileSync(join(dir, 'types-resolve.ts'), TYPES_RESOLVE)
    // --listFiles: which of the package's declarations tsc read, besides any error.
    const compiled = await run(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json'), '--listFiles'], { cwd: dir })

    const clientOnlyDir = join(dir, 'client-only')
    mkdirSync(clientOnlyDir)
    writeFileSync(join(clientOnlyDir, 'client-only.ts'), CLIENT_ONLY)
    const options = (JSON.parse(tsconfig!) as { compilerOptions: Record<string, unknown> }).compilerOptions
    writeFileSync(join(clientOnlyDir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...options, types: [], noEmit: true }, files: ['client-only.ts'] }))
    const clientOnly = await run(process.execPath, [TSC, '-p', join(clientOnlyDir, 'tsconfig.json')], { cwd: dir })

    // What node resolves the package to; a failure is kept as its message, for the test to show.
    const resolvedBy = async (args: string[]) => {
      const ran = await run(process.execPath, args, { cwd: dir })
      return ran.code === 0 ? ran.stdout.trim() : describeRan(`node ${args.join(' ')}`, ran)
    }
    const resolved = {
      require: await resolvedBy(['-p', "require.resolve('@parley/client')"]),
      import: await resolvedBy(['--input-type=module', '-e', "console.log(import.meta.resolve('@parley/client'))"]),
    }
    return { ...kind, dir, manifest, compiled, clientOnly, resolved }
  }

  beforeAll(async () => {
    // As the README says: npm pack in clients/typescript, which builds dist/ first (prepack).
    mkdirSync(join(work, 'tarball'))
    const pack = await mustRun('npm pack', 'npm', ['pack', '--json', '--pack-destination', join(work, 'tarball')], { cwd: CLIENT, env: npmEnv() })
    packed = (JSON.parse(pack.stdout) as (typeof packed)[])[0]!
    if (tsconfig === null) throw new Error('clients/typescript/README.md shows no `json tsconfig.json` block')
    outDir = (JSON.parse(tsconfig) as { compilerOptions: { outDir: string } }).compilerOptions.outDir
    // One after the other: two cores are shared, and each install and compile keeps one busy.
    for (const kind of KINDS) projects.set(kind.kind, await makeProject(kind))

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

  test('the tarball holds both builds, each with its declarations, and no sources; exports sends import and require to their own', () => {
    const files = packed!.files.map((f) => f.path)
    expect(files).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/schema.d.ts', 'dist/cjs/package.json', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/schema.d.ts']),
    )
    expect(files.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md')).toEqual([])
    expect(files.filter((f) => f.startsWith('dist/cjs-src'))).toEqual([])
    // The same modules in each build.
    const esm = files.filter((f) => /^dist\/[^/]+\.(js|d\.ts)$/.test(f)).map((f) => f.slice('dist/'.length))
    const cjs = files.filter((f) => /^dist\/cjs\/[^/]+\.(js|d\.ts)$/.test(f)).map((f) => f.slice('dist/cjs/'.length))
    expect(cjs.sort()).toEqual(esm.sort())
    const installed = JSON.parse(readFileSync(join(projects.get('commonjs')!.dir, 'node_modules/@parley/client/package.json'), 'utf8')) as Record<string, unknown>
    expect(installed).toMatchObject({
      type: 'module',
      main: './dist/cjs/index.js',
      types: './dist/cjs/index.d.ts',
      engines: { node: '>=20.19' },
      exports: {
        '.': {
          import: { types: './dist/index.d.ts', default: './dist/index.js' },
          require: { types: './dist/cjs/index.d.ts', default: './dist/cjs/index.js' },
        },
      },
    })
    expect(installed.private).toBeUndefined()
    const cjsScope = JSON.parse(readFileSync(join(projects.get('commonjs')!.dir, 'node_modules/@parley/client/dist/cjs/package.json'), 'utf8'))
    expect(cjsScope).toEqual({ type: 'commonjs' })
  })

  test('every package the built files import or require is a dependency of the client’s own package.json', () => {
    const root = join(projects.get('commonjs')!.dir, 'node_modules/@parley/client')
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; peerDependencies?: Record<string, string> }
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})])
    const built = filesUnder(join(root, 'dist')).filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'))
    const imported = new Set(built.flatMap((name) => bareImports(readFileSync(join(root, 'dist', name), 'utf8'))))
    expect(imported).toContain('openapi-fetch')
    expect(imported).toContain('eventsource-parser')
    expect([...imported].filter((name) => !declared.has(name))).toEqual([])
  })

  for (const kind of KINDS) {
    describe(`in the ${kind.kind} project`, () => {
      const project = () => projects.get(kind.kind)!

      test(`its package.json is ${kind.kind === 'commonjs' ? "npm init -y's, CommonJS" : 'npm init -y\'s with "type": "module"'}; the package resolves to the ${kind.kind === 'commonjs' ? 'CommonJS' : 'ES module'} build`, () => {
        expect(project().manifest.type ?? 'commonjs').toBe(kind.kind)
        // Whatever the project, `require` gets the CommonJS build and `import` the ES modules.
        expect(project().resolved.require).toBe(join(project().dir, 'node_modules/@parley/client/dist/cjs/index.js'))
        expect(project().resolved.import).toBe(`file://${join(project().dir, 'node_modules/@parley/client/dist/index.js')}`)
      })

      test('the README’s examples compile with tsc against the installed package, with its declarations for that build', () => {
        const { compiled } = project()
        const listed = compiled.stdout.split('\n')
        expect(listed.filter((line) => /error TS\d+/.test(line)).join('\n') + compiled.stderr).toBe('')
        expect(compiled.code).toBe(0)
        const packageFiles = listed.filter((line) => line.includes('/node_modules/@parley/client/'))
        expect(packageFiles).toContain(join(project().dir, 'node_modules/@parley/client', kind.declarations))
        const other = KINDS.find((k) => k.kind !== kind.kind)!
        expect(packageFiles).not.toContain(join(project().dir, 'node_modules/@parley/client', other.declarations))
        for (const example of examples) {
          const built = readFileSync(join(project().dir, outDir, example.file.replace(/\.ts$/, '.js')), 'utf8')
          expect(built, example.file).toMatch(kind.loads)
        }
      })

      test('the client’s types are complete without @types/node', () => {
        expect(project().clientOnly.stdout + project().clientOnly.stderr).toBe('')
        expect(project().clientOnly.code).toBe(0)
      })

      for (const example of examples) {
        test(`${example.file} (README line ${example.line}) runs against a live server and prints what the README shows`, async () => {
          const script = join(project().dir, outDir, example.file.replace(/\.ts$/, '.js'))
          const ran = await run(process.execPath, [script], { cwd: project().dir, env })
          expect(ran.stderr).toBe('')
          expect(ran.code).toBe(0)
          expect(ran.stdout.trimEnd()).toBe(example.output?.trimEnd())
        })
      }
    })
  }
})
