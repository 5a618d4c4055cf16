import { parseArgs } from 'node:util'
import { isNamespace } from '../domain/namespace.ts'
import { isMoneyString, Money, unitsToMoney } from '../domain/money.ts'
import { usageReportBody } from '../http/usage-report-body.ts'
import type { CreditType } from '../store/balance.ts'
import type { Store } from '../store/index.ts'
import type { Organisation } from '../store/organisations.ts'
import { UPDATE_KINDS, type UpdateKind } from '../store/platform-updates.ts'
import { RUN_STATUSES, type RunStatus } from '../store/runs.ts'
import { USAGE_DIMENSIONS, type UsageBin, type UsageDimension } from '../store/usage-report.ts'
import { importCatalogue } from '../providers/catalogue/catalogue-import.ts'
import { CatalogueFileError } from '../providers/catalogue/load-catalogue.ts'
import { balanceTable, keyTable, runTable, usageTable, type RunLine } from './admin-tables.ts'

/** A failure the operator can fix; the message goes to stderr as is. */
export class AdminError extends Error {}

const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/
const CLI_BALANCE_TYPES = ['topup', 'refund', 'adjustment', 'promotional_credit'] as const

/** A flag as parseArgs takes it, with what `help` says of it. */
type Flag = { type: 'string' | 'boolean'; description: string; value?: string; required?: boolean }
type Flags = Record<string, Flag>
type Options = Record<string, { type: 'string' | 'boolean' }>

/** `--amount -2.50` is a negative value, not a flag; parseArgs would call it ambiguous. */
function attachNegativeValues(args: string[], options: Options): string[] {
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const next = args[i + 1]
    const takesValue = arg.startsWith('--') && options[arg.slice(2)]?.type === 'string'
    if (takesValue && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`)
      i++
    } else {
      out.push(arg)
    }
  }
  return out
}

function parse<F extends Flags>(args: string[], flags: F, positionals = 0) {
  const options: Options = Object.fromEntries(Object.entries(flags).map(([name, flag]) => [name, { type: flag.type }]))
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({ args: attachNegativeValues(args, options), options, strict: true, allowPositionals: positionals > 0 })
  } catch (error) {
    throw new AdminError((error as Error).message)
  }
  if (parsed.positionals.length > positionals) throw new AdminError(`unexpected argument "${parsed.positionals[positionals]}"`)
  return {
    values: parsed.values as { [K in keyof F]?: F[K]['type'] extends 'boolean' ? boolean : string },
    positionals: parsed.positionals,
  }
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value.trim() === '') throw new AdminError(`--${flag} is required`)
  return value
}

function slugify(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64)
}

/** An organisation by id or by slug: operators remember slugs. */
function existingOrg(store: Store, idOrSlug: string) {
  const org = store.organisations.get(idOrSlug) ?? store.organisations.getBySlug(idOrSlug)
  if (!org) throw new AdminError(`no organisation with id or slug "${idOrSlug}"`)
  return org
}

function describeOrg(store: Store, org: Organisation) {
  return { ...org, balance: store.balance.balanceOf(org.id) }
}

const ORG_FLAG: Flag = { type: 'string', value: '<id|slug>', description: 'the organisation, by id or slug', required: true }
const JSON_FLAG: Flag = { type: 'boolean', description: 'print one JSON object instead of a table, for scripts' }
const MAX_LIMIT = 1000
const HOUR_MS = 3_600_000
const USAGE_BINS: readonly UsageBin[] = ['hour', 'day']

/** --limit: a whole number from 1 to MAX_LIMIT, `fallback` when absent. */
function limitOf(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > MAX_LIMIT) {
    throw new AdminError(`--limit must be a whole number from 1 to ${MAX_LIMIT}, got "${value}"`)
  }
  return Number(value)
}

// A date is its UTC midnight; a time must name its zone, or it would mean the operator's local time.
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/

/** A date (2026-11-26) or a date-time with its zone (2026-11-26T09:00Z), as an ISO instant in UTC. */
function instantOf(value: string, flag: string): Date {
  const match = INSTANT.exec(value)
  const [year, month, day] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0]
  // Date rolls 2026-02-30 over into March; a day that does not exist is refused instead.
  const calendar = new Date(Date.UTC(year, month - 1, day))
  const parsed = new Date(value)
  if (!match || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day || Number.isNaN(parsed.getTime())) {
    throw new AdminError(`--${flag} must be a date such as 2026-11-26 or a time with its zone such as 2026-11-26T09:00Z, got "${value}"`)
  }
  return parsed
}

/** An optional --from/--to pair, half-open [from, to); the whole ledger when both are absent. */
function rangeOf(v: { from?: string; to?: string }): { from: string; to: string } {
  const from = v.from === undefined ? '' : instantOf(v.from, 'from').toISOString()
  // Every ISO instant sorts below a string starting with a later character than any digit.
  const to = v.to === undefined ? '\uffff' : instantOf(v.to, 'to').toISOString()
  if (from >= to) throw new AdminError('--from must be before --to')
  return { from, to }
}

type Command = {
  summary: string
  /** A positional argument the command takes instead of a flag, if any. */
  argument?: { name: string; description: string }
  flags: Flags
  /** The value the command prints as JSON. */
  run: (store: Store, args: string[]) => unknown
  /** The text the command prints: a table for listings (JSON with --json), JSON for the rest. */
  print: (store: Store, args: string[]) => string
  /** Whether it only reads: then it runs on a LiteFS replica too, over a read-only connection. */
  readOnly: boolean
}

/** Declares a command whose flags parse into typed values. */
function command<F extends Flags>(
  summary: string,
  flags: F,
  run: (store: Store, values: ReturnType<typeof parse<F>>['values'], positionals: string[]) => unknown,
  argument?: Command['argument'],
): Command {
  const runArgs = (store: Store, args: string[]) => {
    const { values, positionals } = parse(args, flags, argument ? 1 : 0)
    return run(store, values, positionals)
  }
  return {
    summary,
    flags,
    ...(argument ? { argument } : {}),
    run: runArgs,
    print: (store, args) => `${JSON.stringify(runArgs(store, args))}\n`,
    readOnly: false,
  }
}

/** A command declared with `command` that only reads (it prints JSON, not a table). */
function reading(c: Command): Command {
  return { ...c, readOnly: true }
}

/** Declares a read-only command printed as a table for people, or as JSON with --json. */
function listing<F extends Flags, R>(
  summary: string,
  flags: F,
  run: (store: Store, values: ReturnType<typeof parse<F>>['values']) => R,
  table: (result: R) => string,
): Command {
  const all = { ...flags, json: JSON_FLAG }
  const runArgs = (store: Store, args: string[]) => {
    const { values } = parse(args, all)
    return { result: run(store, values), json: values.json === true }
  }
  return {
    summary,
    flags: all,
    run: (store, args) => runArgs(store, args).result,
    print: (store, args) => {
      const { result, json } = runArgs(store, args)
      return json ? `${JSON.stringify(result)}\n` : table(result)
    },
    readOnly: true,
  }
}

/** `catalogue import FILE`: prints the diff for people, then one JSON line with what was done. */
function catalogueImport(): Command {
  const flags = {
    'effective-at': { type: 'string', value: '<date|time>', description: 'when its prices and lifecycle take effect (now when absent); never in the past' },
    'dry-run': { type: 'boolean', description: 'check the file and show the diff; change nothing' },
  } satisfies Flags
  const runArgs = (store: Store, args: string[]) => {
    const { values, positionals } = parse(args, flags, 1)
    const file = positionals[0]
    if (!file) throw new AdminError('catalogue import needs the FILE to import')
    try {
      return importCatalogue(store, file, {
        ...(values['effective-at'] === undefined ? {} : { effectiveAt: instantOf(values['effective-at'], 'effective-at') }),
        dryRun: values['dry-run'] === true,
      })
    } catch (error) {
      if (error instanceof CatalogueFileError) throw new AdminError(error.message)
      throw error
    }
  }
  return {
    summary: 'check a catalogue file, show what it changes, and make it the catalogue from --effective-at (docs/decisions/041-catalogue-lifecycle.md)',
    argument: { name: 'FILE', description: 'a catalogue file in the shape of catalogue/models.json' },
    flags,
    run: runArgs,
    print: (store, args) => {
      const plan = runArgs(store, args)
      const { diff, ...rest } = plan
      return `${plan.lines.join('\n')}\n${JSON.stringify({ ...rest, lines: undefined, added: diff.added, removed: diff.removed, changed: diff.changed.map((c) => c.name) })}\n`
    },
    readOnly: false,
  }
}

const commands: Record<string, Command> = {
  'org create': command(
    'create an organisation',
    {
      name: { type: 'string', value: '<name>', description: 'its display name', required: true },
      slug: { type: 'string', value: '<slug>', description: 'lower-case letters, digits and dashes; derived from the name when absent' },
    },
    (store, v) => {
      const name = required(v.name, 'name')
      const slug = v.slug ?? slugify(name)
      if (!SLUG_PATTERN.test(slug)) throw new AdminError(`--slug must match ${SLUG_PATTERN.source}, got "${slug}"`)
      if (store.organisations.getBySlug(slug)) throw new AdminError(`an organisation with slug "${slug}" exists`)
      const org = store.organisations.create(name, slug)
      return { id: org.id, name: org.name, slug: org.slug }
    },
  ),
  'org list': reading(
    command('list every organisation with its balance, oldest first', {}, (store) => ({
      data: store.organisations.list().map((org) => describeOrg(store, org)),
    })),
  ),
  'org show': reading(command(
    'show one organisation with its balance',
    { org: { ...ORG_FLAG, required: false, description: 'the organisation, by id or slug (or give it as the argument)' } },
    (store, v, positionals) => {
      if (v.org !== undefined && positionals[0] !== undefined) throw new AdminError('give the organisation once: as the argument or as --org')
      return describeOrg(store, existingOrg(store, required(v.org ?? positionals[0], 'org')))
    },
    { name: '<id|slug>', description: 'the organisation' },
  )),
  'org set-markup': command(
    "set the organisation's markup on catalogue prices",
    { org: ORG_FLAG, percent: { type: 'string', value: '<percent>', description: 'a non-negative decimal, e.g. 7.5', required: true } },
    (store, v) => {
      const org = existingOrg(store, required(v.org, 'org'))
      const percent = required(v.percent, 'percent')
      if (!isMoneyString(percent) || new Money(percent).isNegative()) {
        throw new AdminError(`--percent must be a non-negative decimal such as 7.5, got "${percent}"`)
      }
      return store.organisations.setMarkup(org.id, new Money(percent).toFixed())
    },
  ),
  'key create': command(
    'create an API key; its secret is printed once',
    { org: ORG_FLAG, name: { type: 'string', value: '<name>', description: 'a label for the key' } },
    (store, v) => store.apiKeys.create(existingOrg(store, required(v.org, 'org')).id, v.name ?? null),
  ),
  'key list': listing(
    "list the organisation's API keys, revoked ones too, oldest first (never their secrets)",
    { org: ORG_FLAG },
    (store, v) => ({ data: store.apiKeys.listOfOrg(existingOrg(store, required(v.org, 'org')).id) }),
    (result) => keyTable(result.data),
  ),
  'key revoke': command('revoke an API key', { id: { type: 'string', value: '<key-id>', description: "the key's id (not its secret)", required: true } }, (store, v) => {
    const id = required(v.id, 'id')
    const revoked = store.apiKeys.revoke(id)
    if (!revoked) throw new AdminError(`no API key with id ${id}`)
    return revoked
  }),
  'balance add': command(
    "add an entry to the organisation's balance",
    {
      org: ORG_FLAG,
      amount: { type: 'string', value: '<usd>', description: 'a decimal in USD, e.g. 12.50; negative only for an adjustment', required: true },
      type: { type: 'string', value: `<${CLI_BALANCE_TYPES.join('|')}>`, description: 'the entry type; topup when absent' },
    },
    (store, v) => {
      const org = existingOrg(store, required(v.org, 'org'))
      const amount = required(v.amount, 'amount')
      const type = (v.type ?? 'topup') as CreditType
      if (!(CLI_BALANCE_TYPES as readonly string[]).includes(type)) {
        throw new AdminError(`--type must be one of ${CLI_BALANCE_TYPES.join(', ')}`)
      }
      if (!isMoneyString(amount)) throw new AdminError(`--amount must be a decimal with at most 10 fractional digits, got "${amount}"`)
      const value = new Money(amount)
      if (value.isZero()) throw new AdminError('--amount must not be zero')
      if (type !== 'adjustment' && value.isNegative()) throw new AdminError(`--amount must be positive for ${type}`)
      return store.balance.add(org.id, type, amount)
    },
  ),
  'balance history': listing(
    "the organisation's credits and charges, newest first, each with the balance it left",
    {
      org: ORG_FLAG,
      from: { type: 'string', value: '<date|time>', description: 'entries at or after it, e.g. 2026-11-26 or 2026-11-26T09:00Z' },
      to: { type: 'string', value: '<date|time>', description: 'entries before it' },
      limit: { type: 'string', value: '<n>', description: `at most this many entries, 1 to ${MAX_LIMIT}; 50 when absent` },
    },
    (store, v) => {
      const org = existingOrg(store, required(v.org, 'org'))
      const range = rangeOf(v)
      const limit = limitOf(v.limit, 50)
      return { balance: store.balance.balanceOf(org.id), data: store.balanceHistory.history(org.id, range, limit) }
    },
    balanceTable,
  ),
  runs: listing(
    "the organisation's newest runs: status, model, cost and chat",
    {
      org: ORG_FLAG,
      status: { type: 'string', value: `<${RUN_STATUSES.join('|')}>`, description: 'only runs with this status' },
      limit: { type: 'string', value: '<n>', description: `at most this many runs, 1 to ${MAX_LIMIT}; 20 when absent` },
    },
    (store, v) => {
      const org = existingOrg(store, required(v.org, 'org'))
      const status = (v.status ?? null) as RunStatus | null
      if (status !== null && !RUN_STATUSES.includes(status)) throw new AdminError(`--status must be one of ${RUN_STATUSES.join(', ')}`)
      const runs = store.runs.recentOfOrg(org.id, { status, limit: limitOf(v.limit, 20) })
      const data = runs.map(
        (r): RunLine => ({
          id: r.id,
          status: r.status,
          origin: r.origin,
          model: r.model_name,
          cost: r.cost_units === null ? null : unitsToMoney(r.cost_units),
          chat_id: r.chat_id,
          namespace: r.namespace,
          api_key_id: r.api_key_id,
          created_at: r.created_at,
          completed_at: r.completed_at,
          error: r.error,
        }),
      )
      return { data }
    },
    (result) => runTable(result.data),
  ),
  usage: listing(
    "the organisation's usage report over [from, to), as GET /api/v1/usage gives it",
    {
      org: ORG_FLAG,
      from: { type: 'string', value: '<date|time>', description: 'the start, a whole UTC hour, e.g. 2026-11-26 or 2026-11-26T09:00Z', required: true },
      to: { type: 'string', value: '<date|time>', description: 'the end (excluded), a whole UTC hour; the start of the next hour when absent' },
      bin: { type: 'string', value: `<${USAGE_BINS.join('|')}>`, description: 'split the window into UTC buckets' },
      'group-by': { type: 'string', value: `<${USAGE_DIMENSIONS.join('|')}>`, description: 'split it into groups' },
      namespace: { type: 'string', value: '<namespace>', description: 'only this namespace and those beneath it' },
    },
    (store, v) => {
      const org = existingOrg(store, required(v.org, 'org'))
      // The report sums an hourly roll-up: a window edge inside an hour would be silently moved.
      const hour = (value: string, flag: string) => {
        const at = instantOf(value, flag)
        if (at.getTime() % HOUR_MS !== 0) throw new AdminError(`--${flag} must be a whole UTC hour (the report is kept per hour), got "${value}"`)
        return at.toISOString()
      }
      const from = hour(required(v.from, 'from'), 'from')
      const to = v.to === undefined ? new Date((Math.floor(store.now().getTime() / HOUR_MS) + 1) * HOUR_MS).toISOString() : hour(v.to, 'to')
      if (from >= to) throw new AdminError('--from must be before --to')
      const bin = (v.bin ?? null) as UsageBin | null
      if (bin !== null && !USAGE_BINS.includes(bin)) throw new AdminError(`--bin must be one of ${USAGE_BINS.join(', ')}`)
      const groupBy = (v['group-by'] ?? null) as UsageDimension | null
      if (groupBy !== null && !USAGE_DIMENSIONS.includes(groupBy)) throw new AdminError(`--group-by must be one of ${USAGE_DIMENSIONS.join(', ')}`)
      const namespace = v.namespace ?? null
      if (namespace !== null && !isNamespace(namespace)) throw new AdminError(`--namespace is not a namespace: "${namespace}"`)
      return usageReportBody(store, org, { window: { from, to }, bin, groupBy, namespace })
    },
    usageTable,
  ),
  'session create': command('create a console session; prints the console_session cookie value', { org: ORG_FLAG }, (store, v) =>
    store.consoleSessions.create(existingOrg(store, required(v.org, 'org')).id),
  ),
  'update publish': command(
    'publish a platform update on the public feed',
    {
      kind: { type: 'string', value: `<${UPDATE_KINDS.join('|')}>`, description: 'what it announces', required: true },
      title: { type: 'string', value: '<title>', description: 'its title', required: true },
      body: { type: 'string', value: '<text>', description: 'its text', required: true },
      important: { type: 'boolean', description: 'mark it important' },
      version: { type: 'string', value: '<version>', description: 'the release it belongs to' },
    },
    (store, v) => {
      const kind = required(v.kind, 'kind') as UpdateKind
      if (!UPDATE_KINDS.includes(kind)) throw new AdminError(`--kind must be one of ${UPDATE_KINDS.join(', ')}`)
      return store.updates.publish({
        kind,
        title: required(v.title, 'title'),
        body: required(v.body, 'body'),
        important: v.important ?? false,
        version: v.version ?? null,
      })
    },
  ),
  'catalogue import': catalogueImport(),
}

const HELP_WORDS = new Set(['help', '--help', '-h'])

/** `handoff` is asynchronous (it waits on LiteFS) and runs outside the store: src/cli/admin-handoff.ts. */
export const HANDOFF_USAGE = [
  '  handoff <litefs-url>',
  "      hands the primary's lease to the LiteFS node at <litefs-url> (its LiteFS API, e.g. http://host:20202),",
  '      holding the database\'s write lock throughout, so no write commits while the lease moves',
  '      (docs/decisions/052-fenced-handoff.md); run it on the primary',
].join('\n')

function flagUsage(name: string, flag: Flag): string {
  const usage = flag.type === 'boolean' ? `--${name}` : `--${name} ${flag.value ?? '<value>'}`
  return flag.required ? usage : `[${usage}]`
}

function commandUsage(name: string, c: Command): string {
  const synopsis = [name, ...(c.argument ? [c.argument.name] : []), ...Object.entries(c.flags).map(([flag, f]) => flagUsage(flag, f))].join(' ')
  const lines = [`  ${synopsis}`, `      ${c.summary}`]
  if (c.argument) lines.push(`      ${c.argument.name.padEnd(24)} ${c.argument.description}`)
  for (const [flag, f] of Object.entries(c.flags)) {
    const left = f.type === 'boolean' ? `--${flag}` : `--${flag} ${f.value ?? '<value>'}`
    lines.push(`      ${left.padEnd(24)} ${f.description}${f.required ? ' (required)' : ''}`)
  }
  return lines.join('\n')
}

export const ADMIN_USAGE = [
  'usage: npm run -s admin -- <command> [flags]',
  '',
  'Works on the server\'s DATA_DIR (./data), also while it runs. On a LiteFS replica only the commands',
  `that read run (${Object.keys(commands).filter((name) => commands[name]!.readOnly).join(', ')}); the others run on the primary.`,
  'key list, runs, usage and balance history print a table, or one JSON object with --json; the other',
  'commands print one JSON object on stdout. A failure prints its reason on stderr and exits 1.',
  '',
  'commands:',
  ...Object.entries(commands).map(([name, c]) => commandUsage(name, c)),
  HANDOFF_USAGE,
  '  help [<command>]',
  '      this text (also --help and -h); `help <command>` or `<command> --help` shows one command',
  '',
].join('\n')

/** The command the arguments name, two words (`key list`) or one (`runs`), and the arguments after it. */
function findCommand(argv: string[]): { name: string; command: Command; rest: string[] } | null {
  const [first = '', second = ''] = argv
  const two = `${first} ${second}`
  if (commands[two]) return { name: two, command: commands[two], rest: argv.slice(2) }
  if (commands[first]) return { name: first, command: commands[first], rest: argv.slice(1) }
  return null
}

/**
 * The help text the arguments ask for (`help`, `--help`, `-h`, `help <command>`, `<command> --help`),
 * or null when they ask for none. Help for a command that does not exist is an AdminError naming it
 * and the commands there are, not the whole usage as if it had been found.
 */
export function adminHelp(argv: string[]): string | null {
  if (argv.length === 0 || !argv.some((arg) => HELP_WORDS.has(arg))) return null
  const asked = argv.filter((arg) => !HELP_WORDS.has(arg))
  if (asked.length === 0) return ADMIN_USAGE
  const one = findCommand(asked)
  if (!one) {
    const named = asked.slice(0, 2).filter((arg) => !arg.startsWith('-')).join(' ') || asked[0]!
    throw new AdminError(`unknown command "${named}"; the commands are ${Object.keys(commands).join(', ')} (\`help\` describes each)`)
  }
  return `usage: npm run -s admin -- ${commandUsage(one.name, one.command).trimStart()}\n`
}

function found(argv: string[]) {
  const command = findCommand(argv)
  if (!command) throw new AdminError(`unknown command "${argv.slice(0, 2).filter((a) => !a.startsWith('-')).join(' ')}"\n${ADMIN_USAGE}`)
  return command
}

/** Whether the command the arguments name only reads; an AdminError when they name none. */
export function adminCommandReadsOnly(argv: string[]): boolean {
  return found(argv).command.readOnly
}

/** Runs one admin command against the store and returns the value it prints as JSON. */
export function runAdminCommand(store: Store, argv: string[]): unknown {
  const { command, rest } = found(argv)
  return command.run(store, rest)
}

/** Runs one admin command against the store and returns the text to print: a table, or a JSON line. */
export function adminOutput(store: Store, argv: string[]): string {
  const { command, rest } = found(argv)
  return command.print(store, rest)
}
