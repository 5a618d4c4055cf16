import type { ToolChoice } from './submission.ts'

/**
 * docs/guide/turn-options.md: a turn's own system instruction goes after the configured instructions
 * of its namespace (the operator's), separated by a blank line; either alone is sent as it is.
 */
export function turnInstructions(configured: string | null, own: string | null | undefined): string | null {
  const mine = own ?? null
  if (mine === null || mine === '') return configured
  if (configured === null || configured === '') return mine
  return `${configured}\n\n${mine}`
}

/**
 * docs/guide/turn-options.md: the tool_choice a turn's tools cannot meet, or null. `required`, and a
 * named tool, need the turn to offer tools, the named one among them; `auto` and `none` always hold.
 */
export function unmetToolChoice(choice: ToolChoice | null | undefined, offered: readonly string[]): { choice: string; offered: string[] } | null {
  if (choice == null || choice === 'auto' || choice === 'none') return null
  if (choice === 'required') return offered.length === 0 ? { choice: 'required', offered: [] } : null
  return offered.includes(choice.name) ? null : { choice: choice.name, offered: [...offered] }
}
