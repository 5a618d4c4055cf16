/** The shape checks the thin converters make on a vendor's event, in place of a schema per event (decision 050). */
export type Json = Record<string, unknown>
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
export const isStr = (v: unknown): v is string => typeof v === 'string'
export const isNum = (v: unknown): v is number => typeof v === 'number'
export const nullishStr = (v: unknown) => v == null || typeof v === 'string'
export const nullishNum = (v: unknown) => v == null || typeof v === 'number'
