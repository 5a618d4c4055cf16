import { parseArgs } from 'node:util'
import { isMoneyString, Money } from '../domain/money.ts'
import type { CreditType } from '../store/balance.ts'
import type { Store } from '../store/index.ts'
import type { Organisation } from '../store/organisations.ts'
import { UPDATE_KINDS, type UpdateKind } from '../store/platform-updates.ts'

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

type Command = {
  summary: string
  /** A positional argument the command takes instead of a flag, if any. */
  argument?: { name: string; description: string }
  flags: Flags
  run: (store: Store, args: string[]) => unknown
}

/** Declares a command whose flags parse into typed values. */
function command<F extends Flags>(
  summary: string,
  flags: F,
  run: (store: Store, values: ReturnType<typeof parse<F>>['values'], positionals: string[]) => unknown,
  argument?: Command['argument'],
): Command {
  return {
    summary,
    flags,
    ...(argument ? { argument } : {}),
    run: (store, args) => {
      const { values, positionals } = parse(args, flags, argument ? 1 : 0)
      return run(store, values, positionals)
    },
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
  'org list': command('list every organisation with its balance, oldest first', {}, (store) => ({
    data: store.organisations.list().map((org) => describeOrg(store, org)),
  })),
  'org show': command(
    'show one organisation with its balance',
    { org: { ...ORG_FLAG, required: false, description: 'the organisation, by id or slug (or give it as the argument)' } },
    (store, v, positionals) => {
      if (v.org !== undefined && positionals[0] !== undefined) throw new AdminError('give the organisation once: as the argument or as --org')
      return describeOrg(store, existingOrg(store, required(v.org ?? positionals[0], 'org')))
    },
    { name: '<id|slug>', description: 'the organisation' },
  ),
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
}

const HELP_WORDS = new Set(['help', '--help', '-h'])

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
  'Works on the server\'s DATA_DIR (./data), also while it runs; on LiteFS, on the primary only.',
  'Each command prints one JSON object on stdout; a failure prints its reason on stderr and exits 1.',
  '',
  'commands:',
  ...Object.entries(commands).map(([name, c]) => commandUsage(name, c)),
  '  help',
  '      this text (also --help and -h; `<command> --help` shows one command)',
  '',
].join('\n')

/** The help text the arguments ask for (`help`, `--help`, `-h`, `<command> --help`), or null when they ask for none. */
export function adminHelp(argv: string[]): string | null {
  if (argv.length === 0 || !argv.some((arg) => HELP_WORDS.has(arg))) return null
  const [noun, verb] = argv
  const one = commands[`${noun ?? ''} ${verb ?? ''}`]
  return one ? `usage: npm run -s admin -- ${commandUsage(`${noun} ${verb}`, one).trimStart()}\n` : ADMIN_USAGE
}

/** Runs one admin command against the store and returns the object to print. */
export function runAdminCommand(store: Store, argv: string[]): unknown {
  const [noun, verb, ...rest] = argv
  const found = commands[`${noun ?? ''} ${verb ?? ''}`]
  if (!found) throw new AdminError(`unknown command "${[noun, verb].filter(Boolean).join(' ')}"\n${ADMIN_USAGE}`)
  return found.run(store, rest)
}
