// The fork copier's thread starts here (src/store/fork-copier.ts): it loads the project's
// TypeScript with tsx, as `npm start` does, whatever loaders the main thread has (a test runner's).
import { register } from 'tsx/esm/api'

register()
await import('./fork-copier-worker.ts')
