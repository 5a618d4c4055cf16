/** Whether a UTF-16 code unit is the first half of a surrogate pair. */
export const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff

/** Whether a UTF-16 code unit is the second half of a surrogate pair. */
export const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff
