import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { liveOpenApiDocument, type OpenApiDocument } from '../../clients/typescript/scripts/openapi-document.ts'
import { renderSchema, SCHEMA_FILE } from '../../clients/typescript/scripts/render-schema.ts'
import { REPO_ROOT } from '../e2e/server-process.ts'

/**
 * The client's types are generated from the live /openapi.json (openapi-typescript), and the client
 * type-checks against them with its own tsconfig. This is the step that fails when the committed
 * clients/typescript/src/schema.ts is stale: regenerate it with `npm run generate` in clients/typescript.
 */

const CLIENT = join(REPO_ROOT, 'clients/typescript')
const TSC = join(REPO_ROOT, 'node_modules/typescript/bin/tsc')

describe('the generated client types', () => {
  let document: OpenApiDocument
  let fresh = ''
  // Under node_modules, so the copy resolves openapi-fetch and eventsource-parser as the client does.
  const cache = join(REPO_ROOT, 'node_modules/.cache')
  let scratch = ''

  beforeAll(async () => {
    document = await liveOpenApiDocument()
    fresh = await renderSchema(document)
    mkdirSync(cache, { recursive: true })
    scratch = mkdtempSync(join(cache, 'parley-client-'))
  })

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true })
  })

  /** Copies the client's sources and tsconfig beside `schema`, runs tsc on them, and returns its output (empty when clean). */
  function typeCheckAgainst(schema: string, name: string): { status: number | null; output: string } {
    const dir = join(scratch, name)
    cpSync(join(CLIENT, 'src'), join(dir, 'src'), { recursive: true })
    cpSync(join(CLIENT, 'tsconfig.json'), join(dir, 'tsconfig.json'))
    writeFileSync(join(dir, 'src/schema.ts'), schema)
    const result = spawnSync(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json'), '--noEmit'], { encoding: 'utf8', timeout: 120_000 })
    return { status: result.status, output: `${result.stdout}${result.stderr}` }
  }

  test('clients/typescript type-checks against types generated now from the live /openapi.json', () => {
    const { status, output } = typeCheckAgainst(fresh, 'fresh')
    expect(output).toBe('')
    expect(status).toBe(0)
  })

  test('the committed src/schema.ts is the one generated from the live /openapi.json (else run `npm run generate` in clients/typescript)', () => {
    const committed = readFileSync(fileURLToPath(SCHEMA_FILE), 'utf8')
    expect(committed.length).toBeGreaterThan(0)
    // A line-by-line diff reads better than two 5,000-line strings when the document changed.
    expect(committed.split('\n')).toEqual(fresh.split('\n'))
  })

  test('the type-check fails when the document loses an operation the client calls', async () => {
    const { ['/api/v1/runs/{run_id}']: _runs, ...paths } = document.paths ?? {}
    const { status, output } = typeCheckAgainst(await renderSchema({ ...document, paths }), 'without-runs')
    expect(status).not.toBe(0)
    expect(output).toContain('src/turns.ts')
    expect(output).toContain('/api/v1/runs/{run_id}')
  })
})
