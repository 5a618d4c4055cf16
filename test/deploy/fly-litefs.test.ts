import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readSettings } from '../../src/settings.ts'
import { REPO_ROOT } from '../e2e/server-process.ts'

const read = (file: string) => readFileSync(join(REPO_ROOT, file), 'utf8')
const one = (text: string, pattern: RegExp, what: string) => {
  const match = pattern.exec(text)
  if (!match) throw new Error(`${what} not found`)
  return match[1]!
}

/** fly.toml, litefs.yml, the Dockerfile and the server must agree on where things are (decision 009). */
describe('deployment files', () => {
  const fly = read('fly.toml')
  const litefs = read('litefs.yml')
  const docker = read('Dockerfile')
  const env = Object.fromEntries([...one(fly, /\[env\]\n([\s\S]*?)\n\n/, 'fly.toml [env]').matchAll(/(\w+) = "(.*)"/g)].map((m) => [m[1], m[2]]))

  it('the server finds the database in the LiteFS mount, and the .primary and .lag files LiteFS writes there', () => {
    const settings = readSettings(env)
    expect(one(litefs, /fuse:\n\s+dir: "(.+)"/, 'fuse.dir')).toBe(env.LITEFS_DIR)
    expect(settings.databaseFile).toBe(join(env.LITEFS_DIR!, 'parley.db'))
    expect(settings.litefs).toEqual({
      dir: env.LITEFS_DIR,
      primaryFile: join(env.LITEFS_DIR!, '.primary'),
      lagFile: join(env.LITEFS_DIR!, '.lag'),
      primaryPort: 8080,
      positionFile: join(env.LITEFS_DIR!, 'parley.db-pos'),
    })
  })

  it('replicas reach the primary where it listens: the 6PN name LiteFS writes, the port Fly routes to, on IPv6', () => {
    expect(one(litefs, /hostname: "(.+)"/, 'lease.hostname')).toBe('${FLY_MACHINE_ID}.vm.${FLY_APP_NAME}.internal')
    expect(one(fly, /internal_port = (\d+)/, 'internal_port')).toBe(env.PORT)
    expect(env.HOST).toBe('::')
  })

  it('LiteFS runs the server as npm start does, and the volume holds LiteFS data', () => {
    const start = JSON.parse(read('package.json')).scripts.start as string
    expect(one(litefs, /- cmd: "(.+)"/, 'exec cmd')).toBe(start)
    expect(one(fly, /destination = "(.+)"/, 'mount destination')).toBe(one(litefs, /data:\n\s+dir: "(.+)"/, 'data.dir'))
    expect(one(docker, /ENTRYPOINT \["litefs", "mount", "-config", "(.+)"\]/, 'entrypoint')).toBe('/app/litefs.yml')
  })
})
