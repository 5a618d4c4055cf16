import { CHAT_MACHINE_DRAWING_PATH, startInspectRelay } from './inspect-relay-server.ts'

// `npm run inspect`: the WebSocket relay between the server's actors and Stately's inspector, which
// its own bridge page embeds. INSPECT_HOST (127.0.0.1: this machine only) and INSPECT_PORT (4242).
const host = process.env.INSPECT_HOST || '127.0.0.1'
const port = Number(process.env.INSPECT_PORT || 4242)
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  process.stderr.write(`inspect: INSPECT_PORT must be a port number, got ${process.env.INSPECT_PORT}\n`)
  process.exit(1)
}

// Listening on every interface, the relay is still reached here at the loopback address.
const WILDCARD = /0\.0\.0\.0|\[::\]/

try {
  const relay = await startInspectRelay({ host, port })
  process.stdout.write(
    `Inspector relay listening on ${relay.url} (INSPECT_HOST=${host}, INSPECT_PORT=${port})\n` +
      `1. Start the server with   STATELY_INSPECT=${relay.url.replace(WILDCARD, '127.0.0.1')} npm start\n` +
      `2. Open the bridge page    http://localhost:${relay.port}/   (it embeds Stately's inspector and feeds it)\n` +
      `The inspector is stately.ai's page and needs the internet; the relay does not. Offline, the chat machine is drawn in\n` +
      `docs/chat-machine.md (npm run diagram), also served here: http://localhost:${relay.port}${CHAT_MACHINE_DRAWING_PATH}\n`,
  )
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void relay.stop().finally(() => process.exit(0)))
} catch (error) {
  process.stderr.write(`inspect: cannot listen on ${host}:${port}: ${(error as Error).message}\n`)
  process.exit(1)
}
