import { relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { localImports, ROOT, sourceFiles, specifiers } from './imports.ts'

/** Imports of files under `folder` that leave what `allowed` accepts, as "file → target". */
function violations(folder: string, allowed: (target: string) => boolean): string[] {
  return sourceFiles(folder).flatMap((file) =>
    localImports(file)
      .filter(({ target }) => !allowed(target))
      .map(({ specifier }) => `${relative(ROOT, file)} → ${specifier}`),
  )
}

const under = (folder: string) => (target: string) => target === folder || target.startsWith(`${folder}/`)

describe('layering (issue 12: types flow one way)', () => {
  it('the import reader sees every form of import', () => {
    const source = [
      "import { a } from '../src/actors/a.ts'",
      "import type { B } from \"../src/store/b.ts\"",
      "export { c } from '../src/actors/c.ts'",
      "import '../src/store/d.ts'",
      "type E = import('../src/actors/e.ts').E",
      "declare module '../src/actors/f.ts' {}",
      'import {\n  g,\n  h,\n} from "../src/store/g.ts"',
    ].join('\n')
    expect(specifiers(source).sort()).toEqual(
      ['../src/actors/a.ts', '../src/store/b.ts', '../src/actors/c.ts', '../src/store/d.ts', '../src/actors/e.ts', '../src/actors/f.ts', '../src/store/g.ts'].sort(),
    )
  })

  it('machines/ imports nothing from src/actors or src/store (the host depends on the machine, never back)', () => {
    expect(sourceFiles('machines').length).toBeGreaterThan(0)
    expect(violations('machines', (target) => !under('src/actors')(target) && !under('src/store')(target))).toEqual([])
  })

  it('machines/ imports only machines/ and src/domain of ours', () => {
    expect(violations('machines', (target) => under('machines')(target) || under('src/domain')(target))).toEqual([])
  })

  it('src/store and src/providers import nothing from src/http, src/actors or machines/ (dependencies point one way)', () => {
    const upward = (target: string) => !under('src/http')(target) && !under('src/actors')(target) && !under('machines')(target)
    expect(violations('src/store', upward)).toEqual([])
    expect(violations('src/providers', upward)).toEqual([])
  })

  it('src/domain imports nothing of ours outside src/domain', () => {
    expect(sourceFiles('src/domain').length).toBeGreaterThan(0)
    expect(violations('src/domain', under('src/domain'))).toEqual([])
  })
})
