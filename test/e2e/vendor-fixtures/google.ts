import { pieces, type ReplayResponse, type VendorFixture } from './wire.ts'

/**
 * Gemini API, streamed (POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse): `data:`
 * events only, CRLF line endings, each a GenerateContentResponse with the candidate's new parts and
 * the usage so far; the last carries finishReason. Gemini 2.5 thinks without showing it, so its
 * usage has thoughtsTokenCount beside candidatesTokenCount.
 */

const MODEL = 'gemini-2.5-flash'

/** Gemini ends its SSE lines with CRLF. */
const chunk = (data: unknown) => `data: ${JSON.stringify(data)}\r\n\r\n`

const headers = {
  'content-type': 'text/event-stream',
  'x-goog-api-client': 'genai-js',
  'server-timing': 'gfet4t7; dur=1187',
  vary: 'Origin, X-Origin, Referer',
}

type Counts = { prompt: number; cached?: number; candidates: number; thoughts: number }
const usageMetadata = (c: Counts) => ({
  promptTokenCount: c.prompt,
  candidatesTokenCount: c.candidates,
  totalTokenCount: c.prompt + c.candidates + c.thoughts,
  ...(c.cached ? { cachedContentTokenCount: c.cached } : {}),
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: c.prompt }],
  ...(c.cached ? { cacheTokensDetails: [{ modality: 'TEXT', tokenCount: c.cached }] } : {}),
  thoughtsTokenCount: c.thoughts,
})

/** One chunk per part; usage grows as the candidate does; the last chunk says STOP. */
function textStream(responseId: string, parts: string[], counts: Counts[]): string[] {
  return parts.map((text, i) =>
    chunk({
      candidates: [{ content: { parts: [{ text }], role: 'model' }, ...(i === parts.length - 1 ? { finishReason: 'STOP' } : {}), index: 0 }],
      usageMetadata: usageMetadata(counts[i]!),
      modelVersion: MODEL,
      responseId,
    }),
  )
}

const answer = pieces('The capital of Norway is', ' Oslo, which sits at the head of the Oslofjord', '.')
export const GOOGLE_RESPONSE_ID = 'mJ3vaNWAK4mvz7IP0p6T4Qk'
/** Implicit caching: 1290 prompt tokens, 1024 of them cached; 9 answer tokens after 437 thinking. */
const text: ReplayResponse = {
  kind: 'stream',
  headers,
  events: textStream(GOOGLE_RESPONSE_ID, answer.parts, [
    { prompt: 1290, cached: 1024, candidates: 5, thoughts: 437 },
    { prompt: 1290, cached: 1024, candidates: 15, thoughts: 437 },
    { prompt: 1290, cached: 1024, candidates: 16, thoughts: 437 },
  ]),
}

const callArgs = { city: 'Oslo' }
const toolCall: ReplayResponse = {
  kind: 'stream',
  headers,
  events: [
    chunk({
      candidates: [
        {
          content: {
            parts: [{ functionCall: { name: 'get_weather', args: callArgs }, thoughtSignature: 'CiQB0e2Kb6vVq3lJ8y1sXoTgk9QhZ3m7cY2uFwR4pN1aD6eH0bM=' }],
            role: 'model',
          },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: usageMetadata({ prompt: 61, candidates: 15, thoughts: 58 }),
      modelVersion: MODEL,
      responseId: 'nK4waOq1Gb2Qz7IPxLGJ8Ac',
    }),
  ],
}

const weather = pieces('It is sunny in Oslo', ' at 21 °C.')
const afterToolResult: ReplayResponse = {
  kind: 'stream',
  headers,
  events: textStream('oL5xaPr2Hc3Rz7IPyMKK9Bd', weather.parts, [
    { prompt: 98, candidates: 6, thoughts: 0 },
    { prompt: 98, candidates: 12, thoughts: 0 },
  ]),
}

export const google: VendorFixture = {
  vendor: 'google',
  basePath: '/google/v1beta',
  isStreamPath: (path) => /^\/google\/v1beta\/models\/[\w.-]+:streamGenerateContent\?alt=sse$/.test(path),
  text: { response: text, text: answer.text, reasoning: '' },
  toolCall: { response: toolCall, text: '', reasoning: '', toolName: 'get_weather', toolCallId: null, arguments: JSON.stringify(callArgs) },
  afterToolResult: { response: afterToolResult, text: weather.text, reasoning: '' },
  serverError: {
    kind: 'json',
    status: 503,
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    body: { error: { code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } },
  },
}
