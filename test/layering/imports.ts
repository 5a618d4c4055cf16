import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dirname, '../..')

/** Every .ts file under a folder of the repository, as absolute paths. */
export function sourceFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

/**
 * The module specifiers a file names: static imports and re-exports (`from '…'`), side-effect
 * imports, dynamic `import('…')` (types included) and `declare module '…'`.
 */
export function specifiers(source: string): string[] {
  const found: string[] = []
  const patterns = [/\bfrom\s+['"]([^'"]+)['"]/g, /^\s*import\s+['"]([^'"]+)['"]/gm, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g, /\bdeclare\s+module\s+['"]([^'"]+)['"]/g]
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]!)
  return found
}

/** The repository-relative paths a file imports from the repository (relative specifiers only). */
export function localImports(file: string): { specifier: string; target: string }[] {
  return specifiers(readFileSync(file, 'utf8'))
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => ({ specifier, target: relative(ROOT, resolve(dirname(file), specifier)) }))
}
