import Database from 'better-sqlite3'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { accessSync, closeSync, constants, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { startConsulLeaseService, type ConsulLeaseService } from '../helpers/consul-lease-service.ts'
import { freePort, REPO_ROOT, waitFor } from '../e2e/server-process.ts'
import { machineTimeout } from '../helpers/machine-timeouts.ts'

/**
 * A LiteFS cluster on loopback for tests (issue 20): N nodes, each one real `litefs mount` process
 * with its own FUSE directory, data directory and LiteFS HTTP port, running the real Parley server
 * under its `exec` as production's litefs.yml does. The primary is elected through Consul's
 * session/KV API, spoken by a test double (test/helpers/consul-lease-service.ts), or fixed by a
 * static lease. Each node's `.primary` names the primary's API as `127.0.0.1:<port>` (its
 * `lease.hostname`), which Parley reads as `host:port`.
 *
 * The cluster files run only under `npm run test:cluster`; there a missing prerequisite (the litefs
 * binary, /dev/fuse, fusermount) fails the file with the reason (`assertClusterCanRun`).
 */

// ---------------------------------------------------------------------------------------------
// Prerequisites
// ---------------------------------------------------------------------------------------------

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK)
    return statSync(file).isFile()
  } catch {
    return false
  }
}

const onPath = (name: string): string | null => {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir && executable(join(dir, name))) return join(dir, name)
  return null
}

/** The litefs binary: on PATH, then /root/go/bin, then `$(go env GOPATH)/bin`; null when none. */
export function findLitefs(): string | null {
  const found = onPath('litefs')
  if (found) return found
  if (executable('/root/go/bin/litefs')) return '/root/go/bin/litefs'
  const go = spawnSync('go', ['env', 'GOPATH'], { encoding: 'utf8' })
  if (go.status === 0) {
    for (const dir of go.stdout.trim().split(delimiter)) if (dir && executable(join(dir, 'bin', 'litefs'))) return join(dir, 'bin', 'litefs')
  }
  return null
}

export type Prerequisites = { ok: true; litefs: string; fusermount: string } | { ok: false; reason: string }

/** What a LiteFS cluster needs on this machine: the litefs binary, a usable /dev/fuse, fusermount3 (or fusermount). */
export function checkPrerequisites(): Prerequisites {
  const litefs = findLitefs()
  if (!litefs) {
    return { ok: false, reason: 'no litefs binary on PATH, in /root/go/bin or in $(go env GOPATH)/bin (CGO_ENABLED=1 go install github.com/superfly/litefs/cmd/litefs@v0.5.14)' }
  }
  try {
    if (!statSync('/dev/fuse').isCharacterDevice()) return { ok: false, reason: '/dev/fuse is not a character device: FUSE is not available here' }
    closeSync(openSync('/dev/fuse', 'r+'))
  } catch (error) {
    return { ok: false, reason: `/dev/fuse cannot be opened for reading and writing (${(error as Error).message}): FUSE is not available to this user` }
  }
  const fusermount = onPath('fusermount3') ?? onPath('fusermount')
  if (!fusermount) return { ok: false, reason: 'neither fusermount3 nor fusermount on PATH (apt-get install fuse3)' }
  return { ok: true, litefs, fusermount }
}

/**
 * The LiteFS cluster files run only under `npm run test:cluster`, which means they must run: a
 * missing prerequisite throws (the file fails, saying why). Returns the litefs binary's path.
 */
export function assertClusterCanRun(): string {
  const prerequisites = checkPrerequisites()
  if (!prerequisites.ok) throw new Error(`the LiteFS cluster cannot run: ${prerequisites.reason}`)
  return prerequisites.litefs
}

// ---------------------------------------------------------------------------------------------
// The cluster
// ---------------------------------------------------------------------------------------------

export type LeaseOptions =
  /** Consul's session/KV through the test double; the TTL and lock-delay are LiteFS's `lease.consul` settings. */
  | { type: 'consul'; ttlMs?: number; lockDelayMs?: number; key?: string }
  /** A fixed primary: the node at `primary` (an index into the nodes) is the only candidate. */
  | { type: 'static'; primary?: number }

export type ClusterOptions = {
  /** Number of nodes; 3 by default. */
  nodes?: number
  lease?: LeaseOptions
  /**
   * Which nodes stand for primary (Consul lease only). Default: all but the last, as production's
   * litefs.yml makes only the primary region's machines candidates (2 in ams, 1 in iad in fly.toml).
   */
  candidates?: boolean[]
  /** LiteFS's `lease.promote` (a candidate takes the lease over from the primary once synced). Default false. */
  promote?: boolean
  /**
   * Start a node's `litefs mount` again when it exits by itself (not through kill9/stop), as Fly
   * restarts a machine whose process ended. Default true.
   */
  restartOnExit?: boolean
  /** Extra environment for every node's Parley (and litefs). */
  env?: Record<string, string | undefined>
  /** Parley's LOG_LEVEL; 'info' by default so role changes and settled runs are in its log. */
  logLevel?: string
  /** How long start() waits for every node to answer /readyz on a quiet machine (scaled by how busy it is). */
  readyTimeoutMs?: number
  /**
   * The directory each node's server runs from (`node src/main.ts` there): the
   * repository by default; another build's tree (with its node_modules) to run that build instead.
   */
  serverDir?: string
}

export type NodeStart = { pid: number; at: number }
export type NodeExit = { at: number; code: number | null; signal: NodeJS.Signals | null; how: 'exited' | 'killed' | 'stopped' }

export type ClusterNode = {
  /** `node-1`…: the node's NODE_ID too. */
  name: string
  index: number
  candidate: boolean
  apiPort: number
  /** Parley's API on this node. */
  url: string
  /** LiteFS's HTTP API (`http.addr`), the advertise URL. */
  litefsUrl: string
  /** What the other nodes' `.primary` holds when this node is the primary: its `lease.hostname`. */
  hostname: string
  dir: string
  fuseDir: string
  /** LiteFS's `data.dir`. */
  litefsDataDir: string
  /** Parley's DATA_DIR (the dev key file, never the database). */
  dataDir: string
  /** The database as Parley opens it: in the FUSE mount. */
  dbFile: string
  configFile: string
  /** The script LiteFS's `exec` runs: it logs the start, then becomes Parley. */
  startScript: string
  litefsLog: string
  parleyLog: string
  /** The running `litefs mount` process, or null while the node is down. */
  process: ChildProcess | null
}

export type LitefsNodeInfo = { clusterID?: string; isPrimary: boolean; candidate: boolean; path: string; primary: { hostname: string } }

export type LitefsCluster = {
  dir: string
  nodes: ClusterNode[]
  /** The Consul test double (null with a static lease). */
  lease: ConsulLeaseService | null
  leaseKey: string
  /** Starts every node at once and waits until one is the primary and every node answers /readyz. */
  start: () => Promise<void>
  /** Milliseconds from start() to every node ready. */
  bootMs: () => number | null
  node: (nameOrIndex: string | number) => ClusterNode
  /** This node's `.primary` content (trimmed), or null when the file is absent (on the primary, or a replica connected to none). */
  primaryFile: (node: ClusterNode) => string | null
  /**
   * LiteFS's `.lag` file: 0 only while this node holds the primary lease; on a replica the
   * milliseconds since the primary's last frame (growing while disconnected), 2147483647 before its
   * first sync; null when the mount does not answer.
   */
  lagFile: (node: ClusterNode) => number | null
  /** LiteFS's own view of the node (GET /info on its HTTP API); null when LiteFS does not answer. */
  info: (node: ClusterNode) => Promise<LitefsNodeInfo | null>
  /** The node LiteFS says is the primary right now (exactly one, else null). */
  primary: () => Promise<ClusterNode | null>
  /**
   * Waits until exactly one node is the primary and every other running node's `.primary` names it,
   * within `timeoutMs` (a quiet machine's bound) scaled by how busy the machine is.
   */
  waitForPrimary: (timeoutMs?: number) => Promise<ClusterNode>
  /** The replicas of the current primary (the running nodes that are not it). */
  replicas: () => Promise<ClusterNode[]>
  /** Waits for the node to answer /readyz, within `timeoutMs` (a quiet machine's bound) scaled by how busy the machine is. */
  waitReady: (node: ClusterNode, timeoutMs?: number) => Promise<void>
  /** The dev organisation's API key, written by the node that first started as primary. */
  apiKey: () => string
  /** The node's LiteFS position (the TXID in `<fuse>/parley.db-pos`), or null. */
  position: (node: ClusterNode) => bigint | null
  /** Runs `read` on a read-only connection to this node's copy (its FUSE mount), then closes it. */
  readCopy: <T>(node: ClusterNode, read: (db: Database.Database) => T) => T
  /** Every start of Parley on this node (pid and time), from the node's wrapper line in its log. */
  starts: (node: ClusterNode) => NodeStart[]
  /** Every end of this node's `litefs mount`. */
  exits: (node: ClusterNode) => NodeExit[]
  /** SIGKILL to the node's process group: litefs and the Parley under it at once. The mount is left stale until restart. */
  kill9: (node: ClusterNode) => Promise<void>
  /** SIGTERM to litefs (it passes it on to Parley and waits), SIGKILL after `graceMs`. */
  stopNode: (node: ClusterNode, graceMs?: number) => Promise<NodeExit>
  /** Starts a node that is down (after kill9/stopNode) and waits for its /readyz unless told not to. */
  restart: (node: ClusterNode, options?: { waitReady?: boolean }) => Promise<void>
  /**
   * Hands the primary lease to `to` as an operator would: `npm run -s admin -- handoff <to's LiteFS API>`
   * on the current primary (src/cli/admin-handoff.ts: LiteFS's promotion with the write lock held).
   * Resolves once LiteFS on `to` says it is the primary, with how long the command held the write lock.
   */
  handoff: (to: ClusterNode, timeoutMs?: number) => Promise<{ writesHeldMs: number }>
  /** The last `lines` lines of the node's LiteFS and Parley logs. */
  tail: (node: ClusterNode, lines?: number) => string
  /** Every node's log tails, for a failed test's output. */
  report: (lines?: number) => string
  /** Kills everything, unmounts every FUSE directory, closes the lease service, removes the directory (kept with PARLEY_LITEFS_KEEP=1). */
  stop: () => Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const yamlString = (value: string) => JSON.stringify(value)
const START_MARK = 'parley-cluster-start'

/** Every cluster not yet stopped, so a dying test process still unmounts and kills what it started. */
const liveClusters = new Set<{ emergencyStop: () => void }>()
let exitHookInstalled = false
function installExitHook() {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once('exit', () => {
    for (const cluster of liveClusters) cluster.emergencyStop()
  })
}

const mounted = (dir: string) => readFileSync('/proc/self/mounts', 'utf8').split('\n').some((line) => line.split(' ')[1] === dir)

/** Unmounts a FUSE directory, stale or not: fusermount -u, then lazily (-z), then umount -l. */
function unmount(dir: string, fusermount: string) {
  for (let attempt = 0; attempt < 3 && mounted(dir); attempt++) {
    spawnSync(fusermount, ['-u', dir], { stdio: 'ignore' })
    if (!mounted(dir)) return
    spawnSync(fusermount, ['-u', '-z', dir], { stdio: 'ignore' })
    if (!mounted(dir)) return
    spawnSync('umount', ['-l', dir], { stdio: 'ignore' })
  }
}

const tailOf = (file: string, lines: number) => {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines - 1).join('\n')
  } catch {
    return '(no log)'
  }
}

export async function startLitefsCluster(options: ClusterOptions = {}): Promise<LitefsCluster> {
  const prerequisites = checkPrerequisites()
  if (!prerequisites.ok) throw new Error(`cannot start a LiteFS cluster: ${prerequisites.reason}`)
  const { litefs, fusermount } = prerequisites
  installExitHook()

  const count = options.nodes ?? 3
  const leaseOptions: LeaseOptions = options.lease ?? { type: 'consul' }
  const staticPrimary = leaseOptions.type === 'static' ? (leaseOptions.primary ?? 0) : -1
  const candidates =
    leaseOptions.type === 'static' ? Array.from({ length: count }, (_, i) => i === staticPrimary) : (options.candidates ?? Array.from({ length: count }, (_, i) => count === 1 || i < count - 1))
  const restartOnExit = options.restartOnExit ?? true
  const dir = mkdtempSync(join(tmpdir(), 'parley-litefs-'))
  const leaseKey = leaseOptions.type === 'consul' ? (leaseOptions.key ?? 'litefs/parley-test') : ''
  const ttlMs = leaseOptions.type === 'consul' ? (leaseOptions.ttlMs ?? 2_000) : 0
  const lockDelayMs = leaseOptions.type === 'consul' ? (leaseOptions.lockDelayMs ?? 1_000) : 0
  // Consul refuses session TTLs under its session_ttl_min (10 s); the double's is lowered to the test's TTL, as an agent setting would be.
  const lease = leaseOptions.type === 'consul' ? await startConsulLeaseService({ minSessionTtlMs: Math.min(ttlMs, 10_000) }) : null

  const nodes: ClusterNode[] = []
  for (let i = 0; i < count; i++) {
    const name = `node-${i + 1}`
    const nodeDir = join(dir, name)
    const apiPort = await freePort()
    const litefsPort = await freePort()
    const node: ClusterNode = {
      name,
      index: i,
      candidate: candidates[i] ?? false,
      apiPort,
      url: `http://127.0.0.1:${apiPort}`,
      litefsUrl: `http://127.0.0.1:${litefsPort}`,
      hostname: `127.0.0.1:${apiPort}`,
      dir: nodeDir,
      fuseDir: join(nodeDir, 'fuse'),
      litefsDataDir: join(nodeDir, 'litefs'),
      dataDir: join(nodeDir, 'data'),
      dbFile: join(nodeDir, 'fuse', 'parley.db'),
      configFile: join(nodeDir, 'litefs.yml'),
      startScript: join(nodeDir, 'start-parley.sh'),
      litefsLog: join(nodeDir, 'litefs.log'),
      parleyLog: join(nodeDir, 'parley.log'),
      process: null,
    }
    for (const d of [node.fuseDir, node.litefsDataDir, node.dataDir]) mkdirSync(d, { recursive: true })
    nodes.push(node)
  }

  const configOf = (node: ClusterNode): string => {
    const primary = nodes[staticPrimary]
    const leaseYaml =
      leaseOptions.type === 'consul'
        ? [
            'lease:',
            '  type: "consul"',
            `  hostname: ${yamlString(node.hostname)}`,
            `  advertise-url: ${yamlString(node.litefsUrl)}`,
            `  candidate: ${node.candidate}`,
            `  promote: ${options.promote ?? false}`,
            '  consul:',
            `    url: ${yamlString(lease!.url)}`,
            `    key: ${yamlString(leaseKey)}`,
            `    ttl: "${ttlMs}ms"`,
            `    lock-delay: "${lockDelayMs}ms"`,
          ]
        : [
            'lease:',
            '  type: "static"',
            `  hostname: ${yamlString(primary!.hostname)}`,
            `  advertise-url: ${yamlString(primary!.litefsUrl)}`,
            `  candidate: ${node.candidate}`,
          ]
    return [
      `# ${node.name} of a test cluster (test/cluster/litefs-cluster.ts)`,
      'fuse:',
      `  dir: ${yamlString(node.fuseDir)}`,
      'data:',
      `  dir: ${yamlString(node.litefsDataDir)}`,
      // As production: a replication error keeps the node up, serving reads.
      'exit-on-error: false',
      'http:',
      `  addr: ${yamlString(new URL(node.litefsUrl).host)}`,
      'log:',
      '  timestamp: true',
      ...leaseYaml,
      'exec:',
      `  - cmd: ${yamlString(`sh ${node.startScript}`)}`,
      '',
    ].join('\n')
  }
  // LiteFS runs `exec` without a shell and expands `$` in its config; so a script marks each start
  // with Parley's pid ($$ survives exec), then becomes the server, whose output goes to its own log.
  const startScriptOf = (node: ClusterNode) =>
    [
      '#!/bin/sh',
      `# Parley under ${node.name}'s litefs mount (test/cluster/litefs-cluster.ts).`,
      `echo "${START_MARK} pid=$$ at=$(date +%s%3N)" >> '${node.parleyLog}'`,
      `exec node src/main.ts >> '${node.parleyLog}' 2>&1`,
      '',
    ].join('\n')
  for (const node of nodes) {
    writeFileSync(node.configFile, configOf(node))
    writeFileSync(node.startScript, startScriptOf(node), { mode: 0o755 })
  }

  const envOf = (node: ClusterNode): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      LITEFS_DIR: node.fuseDir,
      PORT: String(node.apiPort),
      HOST: '127.0.0.1',
      NODE_ID: node.name,
      DATA_DIR: node.dataDir,
      LOG_LEVEL: options.logLevel ?? 'info',
      LOG_FORMAT: 'json',
    }
    // Vitest's NODE_ENV=test is not the server's business: a dev start (sandbox on, dev organisation).
    delete env.NODE_ENV
    delete env.LITEFS_PRIMARY_PORT
    delete env.LITEFS_PRIMARY_FILE
    delete env.LITEFS_POSITION_FILE
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[name]
      else env[name] = value
    }
    return env
  }

  const exitsOf = new Map<ClusterNode, NodeExit[]>(nodes.map((n) => [n, []]))
  /** Nodes the harness means to be down (after kill9/stopNode/stop), which it does not restart. */
  const down = new Set<ClusterNode>()
  const pendingHow = new Map<ClusterNode, NodeExit['how']>()
  let stopped = false

  const spawnNode = (node: ClusterNode) => {
    unmount(node.fuseDir, fusermount)
    mkdirSync(node.fuseDir, { recursive: true })
    const log = openSync(node.litefsLog, 'a')
    const child = spawn(litefs, ['mount', '-config', node.configFile], {
      cwd: options.serverDir ?? REPO_ROOT,
      env: envOf(node),
      // Its own process group: kill9 ends litefs and the server under it together.
      detached: true,
      stdio: ['ignore', log, log],
    })
    closeSync(log)
    node.process = child
    down.delete(node)
    child.once('exit', (code, signal) => {
      const how = pendingHow.get(node) ?? 'exited'
      pendingHow.delete(node)
      exitsOf.get(node)!.push({ at: Date.now(), code, signal, how })
      if (node.process === child) node.process = null
      // Whatever litefs left running in its group (a server that outlived it) goes too.
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {}
      if (how === 'exited' && restartOnExit && !stopped && !down.has(node)) {
        setTimeout(() => {
          if (!stopped && !down.has(node) && node.process === null) spawnNode(node)
        }, 1_000).unref()
      }
    })
  }

  const running = (node: ClusterNode) => node.process !== null && node.process.exitCode === null && node.process.signalCode === null

  const primaryFile = (node: ClusterNode): string | null => {
    try {
      return readFileSync(join(node.fuseDir, '.primary'), 'utf8').trim()
    } catch {
      return null
    }
  }

  const info = async (node: ClusterNode): Promise<LitefsNodeInfo | null> => {
    try {
      const res = await fetch(`${node.litefsUrl}/info`, { signal: AbortSignal.timeout(2_000) })
      return res.ok ? ((await res.json()) as LitefsNodeInfo) : null
    } catch {
      return null
    }
  }

  const primary = async (): Promise<ClusterNode | null> => {
    const up = nodes.filter(running)
    const infos = await Promise.all(up.map(info))
    const primaries = up.filter((_, i) => infos[i]?.isPrimary === true)
    return primaries.length === 1 ? primaries[0]! : null
  }

  const waitReady = async (node: ClusterNode, timeoutMs = options.readyTimeoutMs ?? 60_000) => {
    await waitFor(
      `${node.name} (${node.url}) to answer /readyz`,
      async () => {
        if (!running(node)) throw new Error(`${node.name}'s litefs mount is not running (exits: ${JSON.stringify(exitsOf.get(node))})`)
        const res = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(machineTimeout(1_000)) })
        await res.arrayBuffer()
        return res.ok
      },
      machineTimeout(timeoutMs),
      200,
    )
  }

  const waitForPrimary = async (timeoutMs = 60_000): Promise<ClusterNode> =>
    waitFor(
      'exactly one primary, named by every running replica',
      async () => {
        const found = await primary()
        if (!found) return undefined
        const others = nodes.filter((n) => n !== found && running(n))
        return others.every((n) => primaryFile(n) === found.hostname) ? found : undefined
      },
      machineTimeout(timeoutMs),
      100,
    )

  let startedAt: number | null = null
  let readyAt: number | null = null

  const stopNode = async (node: ClusterNode, graceMs = 15_000): Promise<NodeExit> => {
    down.add(node)
    const child = node.process
    if (child && running(node)) {
      pendingHow.set(node, 'stopped')
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.kill('SIGTERM')
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL')
        } catch {}
      }, graceMs)
      await exited
      clearTimeout(timer)
    }
    unmount(node.fuseDir, fusermount)
    return exitsOf.get(node)!.at(-1)!
  }

  const kill9 = async (node: ClusterNode) => {
    down.add(node)
    const child = node.process
    if (!child || !running(node)) return
    pendingHow.set(node, 'killed')
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    process.kill(-child.pid!, 'SIGKILL')
    await exited
  }

  /** SIGKILL to the node's process group (litefs and its server), then its FUSE mount undone. */
  const killAndUnmount = (node: ClusterNode) => {
    if (node.process?.pid) {
      try {
        process.kill(-node.process.pid, 'SIGKILL')
      } catch {}
    }
    unmount(node.fuseDir, fusermount)
  }

  const emergency = {
    emergencyStop() {
      stopped = true
      for (const node of nodes) killAndUnmount(node)
      void lease?.close()
      if (process.env.PARLEY_LITEFS_KEEP !== '1' && !nodes.some((n) => mounted(n.fuseDir))) rmSync(dir, { recursive: true, force: true })
    },
  }
  liveClusters.add(emergency)

  const cluster: LitefsCluster = {
    dir,
    nodes,
    lease,
    leaseKey,
    async start() {
      startedAt = Date.now()
      for (const node of nodes) spawnNode(node)
      await waitForPrimary(options.readyTimeoutMs ?? 60_000)
      await Promise.all(nodes.map((node) => waitReady(node)))
      readyAt = Date.now()
    },
    bootMs: () => (startedAt !== null && readyAt !== null ? readyAt - startedAt : null),
    node: (which) => {
      const found = typeof which === 'number' ? nodes[which] : nodes.find((n) => n.name === which)
      if (!found) throw new Error(`no node ${which}`)
      return found
    },
    primaryFile,
    lagFile(node) {
      try {
        return Number(readFileSync(join(node.fuseDir, '.lag'), 'utf8').trim())
      } catch {
        return null
      }
    },
    info,
    primary,
    waitForPrimary,
    async replicas() {
      const p = await primary()
      return nodes.filter((n) => n !== p && running(n))
    },
    waitReady,
    apiKey() {
      for (const node of nodes) {
        const file = join(node.dataDir, 'dev-api-key.txt')
        if (existsSync(file)) return readFileSync(file, 'utf8').trim()
      }
      throw new Error('no node wrote a dev API key (dev-api-key.txt in its DATA_DIR): did the primary bootstrap the dev organisation?')
    },
    position(node) {
      try {
        const match = /^([0-9a-f]{16})\//i.exec(readFileSync(join(node.fuseDir, 'parley.db-pos'), 'utf8').trim())
        return match ? BigInt(`0x${match[1]}`) : null
      } catch {
        return null
      }
    },
    readCopy(node, read) {
      const db = new Database(node.dbFile, { readonly: true, fileMustExist: true })
      try {
        db.pragma('busy_timeout = 5000')
        return read(db)
      } finally {
        db.close()
      }
    },
    starts(node) {
      let text = ''
      try {
        text = readFileSync(node.parleyLog, 'utf8')
      } catch {
        return []
      }
      return [...text.matchAll(new RegExp(`^${START_MARK} pid=(\\d+) at=(\\d+)$`, 'gm'))].map((m) => ({ pid: Number(m[1]), at: Number(m[2]) }))
    },
    exits: (node) => [...exitsOf.get(node)!],
    kill9,
    stopNode,
    async restart(node, restartOptions = {}) {
      if (running(node)) throw new Error(`${node.name} is running; kill9 or stopNode it first`)
      spawnNode(node)
      if (restartOptions.waitReady ?? true) await waitReady(node)
    },
    async handoff(to, timeoutMs = 30_000) {
      const from = await waitForPrimary()
      if (from === to) throw new Error(`${to.name} is the primary already`)
      const result = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', 'handoff', to.litefsUrl], { cwd: options.serverDir ?? REPO_ROOT, env: envOf(from), stdio: ['ignore', 'pipe', 'pipe'] })
        let output = ''
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
        child.once('error', reject)
        child.once('close', (code) => resolve({ code, output }))
      })
      if (result.code !== 0) throw new Error(`admin handoff on ${from.name} to ${to.name} exited with ${result.code}: ${result.output.trim()}`)
      await waitFor(`${to.name} to be the primary after the handoff`, async () => (await info(to))?.isPrimary === true, timeoutMs, 100)
      return { writesHeldMs: (JSON.parse(result.output) as { writes_held_ms: number }).writes_held_ms }
    },
    tail: (node, lines = 40) =>
      `--- ${node.name} litefs (${node.litefsLog}) ---\n${tailOf(node.litefsLog, lines)}\n--- ${node.name} parley (${node.parleyLog}) ---\n${tailOf(node.parleyLog, lines)}`,
    report(lines = 40) {
      const leaseLog = lease ? `\n--- lease events ---\n${lease.events().map((e) => JSON.stringify(e)).join('\n')}` : ''
      return nodes.map((n) => cluster.tail(n, lines)).join('\n') + leaseLog
    },
    async stop() {
      stopped = true
      await Promise.all(nodes.map((node) => stopNode(node, 10_000).catch(() => undefined)))
      for (const node of nodes) killAndUnmount(node)
      await lease?.close()
      liveClusters.delete(emergency)
      if (process.env.PARLEY_LITEFS_KEEP === '1') {
        process.stderr.write(`LiteFS cluster kept in ${dir} (PARLEY_LITEFS_KEEP=1)\n`)
        return
      }
      // A mount that would not go leaves its node's directory (rm would fail inside it); the rest is removed.
      const stuck = nodes.filter((n) => mounted(n.fuseDir))
      if (stuck.length > 0) {
        for (const n of nodes) if (!stuck.includes(n)) rmSync(n.dir, { recursive: true, force: true })
        process.stderr.write(`LiteFS cluster: ${stuck.map((n) => n.fuseDir).join(', ')} still mounted; left in ${dir}\n`)
        return
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return cluster
}

/** Percentile (nearest rank) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export { sleep }
