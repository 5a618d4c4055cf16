import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript'
import type { OpenApiDocument } from './openapi-document.ts'

/** Where the generated types live, relative to the client package. */
export const SCHEMA_FILE = new URL('../src/schema.ts', import.meta.url)

/** The TypeScript types openapi-typescript generates from `document`, as the text of src/schema.ts. */
export async function renderSchema(document: OpenApiDocument): Promise<string> {
  const ast = await openapiTS(document, { silent: true })
  return COMMENT_HEADER + astToString(ast)
}
