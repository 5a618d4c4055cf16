/** One reference token of a JSON pointer (RFC 6901): `~` becomes `~0` and `/` becomes `~1`. */
export const escapeToken = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1')

/** The inverse of `escapeToken`. */
export const unescapeToken = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~')
