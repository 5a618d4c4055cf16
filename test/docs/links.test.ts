import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../e2e/server-process.ts'

/**
 * The README and the guide are read in a checkout of this repository: every relative link must
 * land on a file of the checkout, never beside it (issue 13: links into `../shared/spec`).
 */
const documents = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs/guide')).filter((n) => n.endsWith('.md')).map((n) => `docs/guide/${n}`)]

function relativeLinks(markdown: string): string[] {
  const withoutCode = markdown.replace(/^```[\s\S]*?^```/gm, '')
  return [...withoutCode.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((target) => !/^[a-z]+:|^#|^\//.test(target))
}

describe('links of the README and the guide', () => {
  for (const document of documents) {
    it(`${document}: every relative link lands on a file inside the repository`, () => {
      const links = relativeLinks(readFileSync(join(REPO_ROOT, document), 'utf8'))
      const broken = links.filter((link) => {
        const target = resolve(dirname(join(REPO_ROOT, document)), link.split('#')[0]!)
        return relative(REPO_ROOT, target).startsWith('..') || !existsSync(target)
      })
      expect(broken).toEqual([])
    })
  }

  it('the guide index links every page of the guide', () => {
    const index = readFileSync(join(REPO_ROOT, 'docs/guide/README.md'), 'utf8')
    const pages = readdirSync(join(REPO_ROOT, 'docs/guide')).filter((n) => n.endsWith('.md') && n !== 'README.md')
    for (const page of pages) expect(index, page).toContain(`](${page})`)
  })
})
