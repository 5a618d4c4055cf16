import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Builds dist/ for both module systems (docs/decisions/060-a-first-run-that-explains-itself.md):
 *
 * - `dist/*.js` and `.d.ts`: ES modules, for `import` (tsconfig.json);
 * - `dist/cjs/*.js` and `.d.ts`: CommonJS, for `require` and for TypeScript compiling a CommonJS
 *   project (`npm init -y`), under `dist/cjs/package.json` `{"type": "commonjs"}`.
 *
 * TypeScript decides a file's module system from the nearest package.json, and the client's says
 * `"type": "module"`. So the CommonJS build compiles a copy of src/ staged under a package.json of
 * its own saying `commonjs` (tsconfig.cjs.json), then removes the copy. package.json's `exports`
 * sends `import` to the first and `require` to the second, each with its declarations.
 */
const CLIENT = fileURLToPath(new URL('..', import.meta.url))
const DIST = join(CLIENT, 'dist')
const STAGE = join(DIST, 'cjs-src')
const COMMONJS = `${JSON.stringify({ type: 'commonjs' })}\n`
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc')

function compile(project: string): void {
  const ran = spawnSync(process.execPath, [TSC, '-p', join(CLIENT, project)], { cwd: CLIENT, stdio: 'inherit' })
  if (ran.status !== 0) {
    process.stderr.write(`tsc -p ${project} failed\n`)
    process.exit(ran.status ?? 1)
  }
}

rmSync(DIST, { recursive: true, force: true })
compile('tsconfig.json')

mkdirSync(STAGE, { recursive: true })
for (const name of readdirSync(join(CLIENT, 'src'))) if (name.endsWith('.ts')) copyFileSync(join(CLIENT, 'src', name), join(STAGE, name))
writeFileSync(join(STAGE, 'package.json'), COMMONJS)
try {
  compile('tsconfig.cjs.json')
} finally {
  rmSync(STAGE, { recursive: true, force: true })
}
writeFileSync(join(DIST, 'cjs', 'package.json'), COMMONJS)
