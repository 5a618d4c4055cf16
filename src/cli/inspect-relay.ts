import { createInspectorServer } from '@statelyai/inspect/server'

// `npm run inspect`: the WebSocket relay between the server's actors and Stately's inspector UI.
const port = Number(process.env.INSPECT_PORT ?? 4242)
createInspectorServer({ port, autoOpen: false })
process.stdout.write(
  `Inspector relay on ws://127.0.0.1:${port}\n` +
    `Start the server with STATELY_INSPECT=ws://127.0.0.1:${port} npm start, then open https://stately.ai/inspect\n`,
)
