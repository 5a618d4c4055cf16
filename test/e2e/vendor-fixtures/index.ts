import { anthropic } from './anthropic.ts'
import { deepseek } from './deepseek.ts'
import { google } from './google.ts'
import { mistral } from './mistral.ts'
import { openai } from './openai.ts'
import type { Vendor, VendorFixture } from './wire.ts'
import { xai } from './xai.ts'

export type { ReplayResponse, TextReply, ToolCallReply, Vendor, VendorFixture } from './wire.ts'

/** Every vendor's recorded-shape answers, by vendor. */
export const FIXTURES: Record<Vendor, VendorFixture> = { anthropic, openai, google, mistral, xai, deepseek }
