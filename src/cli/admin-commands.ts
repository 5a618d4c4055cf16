import { parseArgs } from 'node:util'
import { isMoneyString, Money } from '../domain/money.ts'
import type { CreditType } from '../store/balance.ts'
import type { Store } from '../store/index.ts'
import { UPDATE_KINDS, type UpdateKind } from '../store/platform-updates.ts'

/** A failure the operator can fix; the message goes to stderr as is. */
export class AdminError extends Error {}

const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/
const CLI_BALANCE_TYPES = ['topup', 'refund', 'adjustment', 'promotional_credit'] as const

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

function parse<O extends Options>(args: string[], options: O) {
  try {
    return parseArgs({ args: attachNegativeValues(args, options), options, strict: true, allowPositionals: false }).values as {
      [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string
    }
  } catch (error) {
    throw new AdminError((error as Error).message)
  }
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value.trim() === '') throw new AdminError(`--${flag} is required`)
  return value
}

function slugify(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64)
}

function existingOrg(store: Store, id: string) {
  const org = store.organisations.get(id)
  if (!org) throw new AdminError(`no organisation with id ${id}`)
  return org
}

type Command = (store: Store, args: string[]) => unknown

const commands: Record<string, Command> = {
  'org create': (store, args) => {
    const v = parse(args, { name: { type: 'string' }, slug: { type: 'string' } })
    const name = required(v.name, 'name')
    const slug = v.slug ?? slugify(name)
    if (!SLUG_PATTERN.test(slug)) throw new AdminError(`--slug must match ${SLUG_PATTERN.source}, got "${slug}"`)
    if (store.organisations.getBySlug(slug)) throw new AdminError(`an organisation with slug "${slug}" exists`)
    const org = store.organisations.create(name, slug)
    return { id: org.id, name: org.name, slug: org.slug }
  },
  'org set-markup': (store, args) => {
    const v = parse(args, { org: { type: 'string' }, percent: { type: 'string' } })
    const org = existingOrg(store, required(v.org, 'org'))
    const percent = required(v.percent, 'percent')
    if (!isMoneyString(percent) || new Money(percent).isNegative()) {
      throw new AdminError(`--percent must be a non-negative decimal such as 7.5, got "${percent}"`)
    }
    return store.organisations.setMarkup(org.id, new Money(percent).toFixed())
  },
  'key create': (store, args) => {
    const v = parse(args, { org: { type: 'string' }, name: { type: 'string' } })
    const org = existingOrg(store, required(v.org, 'org'))
    return store.apiKeys.create(org.id, v.name ?? null)
  },
  'key revoke': (store, args) => {
    const v = parse(args, { id: { type: 'string' } })
    const id = required(v.id, 'id')
    const revoked = store.apiKeys.revoke(id)
    if (!revoked) throw new AdminError(`no API key with id ${id}`)
    return revoked
  },
  'balance add': (store, args) => {
    const v = parse(args, { org: { type: 'string' }, amount: { type: 'string' }, type: { type: 'string' } })
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
  'session create': (store, args) => {
    const v = parse(args, { org: { type: 'string' } })
    const org = existingOrg(store, required(v.org, 'org'))
    return store.consoleSessions.create(org.id)
  },
  'update publish': (store, args) => {
    const v = parse(args, {
      kind: { type: 'string' },
      title: { type: 'string' },
      body: { type: 'string' },
      important: { type: 'boolean' },
      version: { type: 'string' },
    })
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
}

export const ADMIN_USAGE = `usage: npm run -s admin -- <command> [options]\n\n${Object.keys(commands)
  .map((c) => `  ${c}`)
  .join('\n')}\n`

/** Runs one admin command against the store and returns the object to print. */
export function runAdminCommand(store: Store, argv: string[]): unknown {
  const [noun, verb, ...rest] = argv
  const command = commands[`${noun ?? ''} ${verb ?? ''}`]
  if (!command) throw new AdminError(`unknown command "${[noun, verb].filter(Boolean).join(' ')}"\n${ADMIN_USAGE}`)
  return command(store, rest)
}
