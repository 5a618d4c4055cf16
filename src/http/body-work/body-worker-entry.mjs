// The body-work pool's worker threads start here (src/http/body-work/body-work.ts): plain
// JavaScript that teaches the thread TypeScript (tsx), whatever loaders the main thread had, then
// hands over to the tasks in body-worker.ts.
import { register } from 'tsx/esm/api'

register()
const tasks = await import('./body-worker.ts')

export const parseJson = tasks.parseJson
export const decodeAttachment = tasks.decodeAttachment
export const checkToolBundle = tasks.checkToolBundle
