import type { CatalogueEntry } from '../domain/catalogue/catalogue-entry.ts'
import type { Store } from '../store/index.ts'

/** What the HTTP layer is given to serve; built once by main (or by a test). */
export type AppDeps = {
  store: Store
  catalogue: () => CatalogueEntry[]
  build: { version: string; commit: string }
}
