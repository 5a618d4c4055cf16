// The read thread starts here (src/store/read-thread.ts): plain JavaScript that teaches the thread
// TypeScript (tsx), whatever loaders the main thread had, then runs read-thread-worker.ts.
import { register } from 'tsx/esm/api'

register()
await import('./read-thread-worker.ts')
