import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'

const root = resolve(import.meta.dirname, '..')

function readCommit(): string {
  if (process.env.PARLEY_COMMIT) return process.env.PARLEY_COMMIT
  try {
    const head = readFileSync(resolve(root, '.git/HEAD'), 'utf8').trim()
    if (!head.startsWith('ref: ')) return head
    return readFileSync(resolve(root, '.git', head.slice(5)), 'utf8').trim()
  } catch {
    return 'unknown'
  }
}

/** Version from package.json; commit from PARLEY_COMMIT or the checkout's HEAD. */
export function readBuildInfo(): { version: string; commit: string } {
  const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { version: string }
  return { version: pkg.version, commit: readCommit() }
}
