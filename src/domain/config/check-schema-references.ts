import { escapeToken, unescapeToken } from '../json-pointer.ts'
import type { DocumentProblem } from './validate-retention-rules.ts'

// Keywords whose values are instance data, not schemas: a "$ref" inside them is just data.
const DATA_KEYWORDS = new Set(['default', 'const', 'enum', 'examples', 'example'])
// Keywords whose values map names to schemas: there a key called "default" names a property.
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'])

type Node = { value: unknown; pointer: string; resource: Resource; keysAreNames: boolean }
type Resource = { root: unknown; anchors: Set<string> }
type Reference = { ref: string; pointer: string; resource: Resource }

/**
 * What compiling a tool's schema would find beyond its meta-schema, in one walk of work linear in
 * its size (compiling costs milliseconds a tool and seconds for a large schema, issue 11):
 * `$ref`s that leave the document (we fetch nothing), local `$ref`s that point at nothing, and
 * `pattern`s that are not regular expressions. `at` is the schema's pointer in the request.
 */
export function checkSchemaReferences(schema: unknown, at: string): DocumentProblem[] {
  const problems: DocumentProblem[] = []
  const references: Reference[] = []
  const rootResource: Resource = { root: schema, anchors: new Set() }
  const stack: Node[] = [{ value: schema, pointer: at, resource: rootResource, keysAreNames: false }]
  while (stack.length > 0) {
    const { value, pointer, resource: enclosing, keysAreNames } = stack.pop()!
    if (Array.isArray(value)) {
      value.forEach((child, i) => stack.push({ value: child, pointer: `${pointer}/${i}`, resource: enclosing, keysAreNames: false }))
      continue
    }
    if (value === null || typeof value !== 'object') continue
    const node = value as Record<string, unknown>
    let resource = enclosing
    if (!keysAreNames) {
      // A nested `$id` other than a plain-name fragment starts a resource that its own "#…" refs resolve in.
      if (typeof node.$id === 'string' && !node.$id.startsWith('#') && node !== rootResource.root) resource = { root: node, anchors: new Set() }
      if (typeof node.$id === 'string' && node.$id.startsWith('#')) resource.anchors.add(node.$id.slice(1))
      if (typeof node.$anchor === 'string') resource.anchors.add(node.$anchor)
    }
    for (const [key, child] of Object.entries(node)) {
      const childPointer = `${pointer}/${escapeToken(key)}`
      if (keysAreNames) {
        stack.push({ value: child, pointer: childPointer, resource, keysAreNames: false })
        continue
      }
      if (key === '$ref' && typeof child === 'string') {
        // "" and "#…" point into the schema itself; anything else needs a document we will not fetch.
        if (child !== '' && !child.startsWith('#')) problems.push({ pointer: childPointer, message: 'external schema references are not supported' })
        else references.push({ ref: child, pointer: childPointer, resource })
      } else if (key === 'pattern' && typeof child === 'string' && !isRegExp(child)) {
        problems.push({ pointer: childPointer, message: 'is not a regular expression' })
      } else if (key === 'patternProperties' && child !== null && typeof child === 'object' && !Array.isArray(child)) {
        for (const name of Object.keys(child)) {
          if (!isRegExp(name)) problems.push({ pointer: `${childPointer}/${escapeToken(name)}`, message: 'names no regular expression' })
        }
        stack.push({ value: child, pointer: childPointer, resource, keysAreNames: true })
      } else if (!DATA_KEYWORDS.has(key)) {
        stack.push({ value: child, pointer: childPointer, resource, keysAreNames: SCHEMA_MAPS.has(key) })
      }
    }
  }
  for (const reference of references) {
    if (!resolves(reference)) problems.push({ pointer: reference.pointer, message: `${JSON.stringify(reference.ref)} points at nothing in this schema` })
  }
  return problems.sort((a, b) => (a.pointer < b.pointer ? -1 : a.pointer > b.pointer ? 1 : 0))
}

function resolves({ ref, resource }: Reference): boolean {
  if (ref === '' || ref === '#') return true
  let fragment: string
  try {
    fragment = decodeURIComponent(ref.slice(1))
  } catch {
    return false
  }
  if (!fragment.startsWith('/')) return resource.anchors.has(fragment)
  let node: unknown = resource.root
  for (const token of fragment.slice(1).split('/').map(unescapeToken)) {
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(token) && Number(token) < node.length) node = node[Number(token)]
    else if (node !== null && typeof node === 'object' && !Array.isArray(node) && Object.hasOwn(node, token)) node = (node as Record<string, unknown>)[token]
    else return false
  }
  return typeof node === 'boolean' || (node !== null && typeof node === 'object' && !Array.isArray(node))
}

// Ajv compiles patterns with the `u` flag.
function isRegExp(source: string): boolean {
  try {
    new RegExp(source, 'u')
    return true
  } catch {
    return false
  }
}
