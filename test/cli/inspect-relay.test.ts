import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import { freePort, REPO_ROOT, waitFor } from '../e2e/server-process.ts'

/** `npm run inspect` as a person runs it: it says where it listens, and listens only there. */
function runRelay(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/inspect-relay.ts'], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { child, out: () => out, err: () => err, exited }
}

describe('npm run inspect', () => {
  it('listens on 127.0.0.1 and INSPECT_PORT by default, printing that address, the STATELY_INSPECT to use and the bridge page', async () => {
    const port = await freePort()
    const relay = runRelay({ INSPECT_PORT: String(port) })
    try {
      await waitFor('the relay to print where it listens', () => relay.out().includes('bridge page'), 20_000)
      expect(relay.out()).toContain(`listening on ws://127.0.0.1:${port}`)
      expect(relay.out()).toContain(`STATELY_INSPECT=ws://127.0.0.1:${port} npm start`)
      expect(relay.out()).toContain(`http://localhost:${port}/`)
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200)
      expect(relay.out()).toContain('needs the internet')
      expect(relay.out()).toContain(`http://localhost:${port}/chat-machine.md`)
    } finally {
      relay.child.kill('SIGTERM')
      expect(await relay.exited).toBe(0)
    }
  }, 30_000)

  it('the bridge page says the inspector needs the internet and links to the chat machine drawn offline, which the relay serves', async () => {
    const port = await freePort()
    const relay = runRelay({ INSPECT_PORT: String(port) })
    try {
      await waitFor('the relay to print where it listens', () => relay.out().includes('bridge page'), 20_000)
      const page = await (await fetch(`http://127.0.0.1:${port}/`)).text()
      // Still Stately's bridge: its frame and its WebSocket.
      expect(page).toContain('<iframe id="inspector" src="https://stately.ai/inspect">')
      expect(page).toContain(`new WebSocket('ws://localhost:${port}')`)
      const notice = /<body><p id="parley-offline-notice"[^>]*>([\s\S]*?)<\/p>/.exec(page)?.[1] ?? ''
      expect(notice).toMatch(/stately\.ai\/inspect<\/a>, loaded from the internet: offline this frame stays blank/)
      expect(notice).toContain('<a href="/chat-machine.md" target="_blank">docs/chat-machine.md</a>')
      const drawing = await fetch(`http://127.0.0.1:${port}/chat-machine.md`)
      expect(drawing.status).toBe(200)
      expect(drawing.headers.get('content-type')).toBe('text/plain; charset=utf-8')
      expect(await drawing.text()).toBe(readFileSync(join(REPO_ROOT, 'docs/chat-machine.md'), 'utf8'))
    } finally {
      relay.child.kill('SIGTERM')
      expect(await relay.exited).toBe(0)
    }
  }, 30_000)

  it('a port in use: exit 1 with the reason on stderr', async () => {
    const port = await freePort()
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve))
    try {
      const relay = runRelay({ INSPECT_PORT: String(port) })
      expect(await relay.exited).toBe(1)
      expect(relay.err()).toMatch(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`))
      expect(relay.out()).toBe('')
    } finally {
      blocker.close()
    }
  }, 30_000)
})
