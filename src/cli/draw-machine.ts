import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chatMachine } from '../../machines/chat.machine.ts'
import { renderMachineDocument } from './machine-diagram.ts'

// `npm run diagram`: draws machines/chat.machine.ts into docs/chat-machine.md (a Mermaid state
// diagram and its tables), to read the machine without stately.ai. Run it after changing the machine.
export const CHAT_MACHINE_DRAWING = fileURLToPath(new URL('../../docs/chat-machine.md', import.meta.url))
export const CHAT_MACHINE_SOURCE = 'machines/chat.machine.ts'

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(CHAT_MACHINE_DRAWING, renderMachineDocument(chatMachine, CHAT_MACHINE_SOURCE))
  process.stdout.write(`diagram: wrote ${CHAT_MACHINE_DRAWING}\n`)
}
