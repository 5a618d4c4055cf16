/** A column of a table: its heading, its cell for a row, and whether it lines up on the right (numbers, money). */
export type Column<T> = { heading: string; cell: (row: T) => string | number | null; right?: boolean }

/** What a table prints for a missing value; an empty cell would shift the eye to the next column. */
export const NONE = '-'

/**
 * Rows as a plain-text table for a terminal: a heading line, then one line per row, columns two
 * spaces apart. `empty` is printed instead when there are no rows.
 */
export function renderTable<T>(rows: readonly T[], columns: readonly Column<T>[], empty: string): string {
  if (rows.length === 0) return `${empty}\n`
  const cells = rows.map((row) => columns.map((c) => {
    const value = c.cell(row)
    return value === null || value === '' ? NONE : String(value)
  }))
  const widths = columns.map((c, i) => Math.max(c.heading.length, ...cells.map((line) => line[i]!.length)))
  const line = (values: string[]) =>
    values
      .map((value, i) => (columns[i]!.right ? value.padStart(widths[i]!) : value.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return `${[line(columns.map((c) => c.heading)), ...cells.map(line)].join('\n')}\n`
}
