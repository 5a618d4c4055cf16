import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { fetchOpenApiDocument, liveOpenApiDocument } from './openapi-document.ts'
import { renderSchema, SCHEMA_FILE } from './render-schema.ts'

/**
 * Regenerates src/schema.ts from a live `/openapi.json`: by default the app built from this
 * checkout's src/ (started in-process on a free port), or `--url` for a running server.
 * `--check` writes nothing and exits 1 when the committed file differs from what would be generated.
 */
const { values } = parseArgs({ options: { url: { type: 'string' }, check: { type: 'boolean', default: false } } })

const document = values.url === undefined ? await liveOpenApiDocument() : await fetchOpenApiDocument(values.url)
const fresh = await renderSchema(document)
const path = fileURLToPath(SCHEMA_FILE)

if (values.check) {
  const committed = readFileSync(path, 'utf8')
  if (committed !== fresh) {
    process.stderr.write(`${path} is stale: run \`npm run generate\` in clients/typescript and commit the result\n`)
    process.exit(1)
  }
  process.stdout.write(`${path} is up to date\n`)
} else {
  writeFileSync(path, fresh)
  process.stdout.write(`wrote ${path}\n`)
}
