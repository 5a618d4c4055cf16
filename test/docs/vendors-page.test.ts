import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { baseUrlVariable, keyVariablesOf, VENDOR_KEY_VARIABLES } from '../../src/providers/catalogue/active-providers.ts'
import { loadCatalogue } from '../../src/providers/catalogue/load-catalogue.ts'
import { REPO_ROOT } from '../e2e/server-process.ts'

/**
 * docs/guide/vendors.md's table of keys (issue 23) says what the code reads and what the catalogue
 * file holds: one row per provider of the catalogue, each with the key and base URL variables the
 * code reads and exactly the catalogue's models of that provider, in catalogue order.
 */
const page = readFileSync(join(REPO_ROOT, 'docs/guide/vendors.md'), 'utf8')
const section = page.split('\n## Keys and the models they turn on\n')[1]!.split('\n## ')[0]!
const cells = (line: string) => line.split('|').slice(1, -1).map((cell) => cell.trim())
const codes = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
const rows = section
  .split('\n')
  .filter((line) => line.startsWith('| `'))
  .map((line) => {
    const [provider, key, baseUrl, , models] = cells(line)
    return { provider: codes(provider!)[0]!, key: key!, baseUrl: baseUrl!, models: codes(models!) }
  })
const entries = loadCatalogue().entries

describe('docs/guide/vendors.md', () => {
  it('has one row per provider of the catalogue, in catalogue order', () => {
    expect(rows.map((row) => row.provider)).toEqual([...new Set(entries.map((entry) => entry.provider))])
  })

  for (const row of rows) {
    it(`${row.provider}: the models it turns on are the catalogue's`, () => {
      // The models a key turns on are those not retired in the file; retired ones have their own table.
      expect(row.models).toEqual(entries.filter((entry) => entry.provider === row.provider && entry.status !== 'retired').map((entry) => entry.name))
    })

    it(`${row.provider}: the key and base URL variables are the ones the code reads`, () => {
      const key = VENDOR_KEY_VARIABLES[row.provider]
      if (key === undefined) {
        // The sandbox: no key, no endpoint; SANDBOX turns it on.
        expect(row.provider).toBe('sandbox')
        expect(row.key).toContain('`SANDBOX=on`')
        expect(row.baseUrl).toBe('none')
        return
      }
      // The key variable, then the aliases read after it (decision 060), as the code orders them.
      expect(codes(row.key)).toEqual(keyVariablesOf(row.provider))
      expect(codes(row.key)[0]).toBe(key)
      expect(codes(row.baseUrl)).toEqual([baseUrlVariable(row.provider)])
    })
  }
})
