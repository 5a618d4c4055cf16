import { describe, expect, it } from 'vitest'
import { API_KEY_PREFIX, generateSecret, SESSION_TOKEN_PREFIX } from '../../src/domain/credentials.ts'
import { redactUrl, serializeRequest } from '../../src/http/redact-url.ts'
import { captureLog, createTestApp } from '../helpers/test-app.ts'

const key = generateSecret(API_KEY_PREFIX)
const session = generateSecret(SESSION_TOKEN_PREFIX)

describe('redactUrl', () => {
  it('keeps a URL without secrets byte for byte', () => {
    for (const url of ['/', '/api/v1/chats', '/api/v1/chats?limit=10&cursor=abc%20d', '/api/v1/chats/0b6f5a0e-7c1e-4c6a-9a55-2f0d7d3b9a11/history?', '/x?flag&a=&b=1']) {
      expect(redactUrl(url)).toBe(url)
    }
  })

  it('redacts the value of credential-carrying query parameters, whatever their case', () => {
    expect(redactUrl('/api/v1/chats?api_key=abc&limit=5')).toBe('/api/v1/chats?api_key=[redacted]&limit=5')
    expect(redactUrl('/x?API_KEY=abc')).toBe('/x?API_KEY=[redacted]')
    expect(redactUrl('/x?Key=1&token=2&Access_Token=3&authorization=Bearer%20x&page=2')).toBe(
      '/x?Key=[redacted]&token=[redacted]&Access_Token=[redacted]&authorization=[redacted]&page=2',
    )
    expect(redactUrl('/x?api-key=abc&apikey=def')).toBe('/x?api-key=[redacted]&apikey=[redacted]')
  })

  it('redacts every occurrence of a repeated parameter', () => {
    expect(redactUrl('/x?token=a&limit=1&token=b&TOKEN=c')).toBe('/x?token=[redacted]&limit=1&token=[redacted]&TOKEN=[redacted]')
  })

  it('sees through percent-encoded parameter names', () => {
    expect(redactUrl('/x?api%5Fkey=abc&access%5ftoken=def')).toBe('/x?api%5Fkey=[redacted]&access%5ftoken=[redacted]')
  })

  it('redacts a key of ours under any parameter name, and a parameter named by a key', () => {
    expect(redactUrl(`/x?q=${key}&limit=5`)).toBe('/x?q=[redacted]&limit=5')
    expect(redactUrl(`/x?q=Bearer+${key}`)).toBe('/x?q=[redacted]')
    expect(redactUrl(`/x?${key}`)).toBe('/x?[redacted]')
    expect(redactUrl(`/x?${key}=1`)).toBe('/x?[redacted]=1')
    expect(redactUrl(`/x?sid=${session}`)).toBe('/x?sid=[redacted]')
  })

  it('redacts a key pasted as a path id, keeping the rest of the path', () => {
    expect(redactUrl(`/api/v1/chats/${key}`)).toBe('/api/v1/chats/[redacted]')
    expect(redactUrl(`/api/v1/chats/${key}/history?limit=2`)).toBe('/api/v1/chats/[redacted]/history?limit=2')
    expect(redactUrl(`/api/v1/chats/${session}`)).toBe('/api/v1/chats/[redacted]')
  })

  it('redacts encoded forms of a key', () => {
    const encoded = key.replace('pk_', 'pk%5F')
    expect(redactUrl(`/api/v1/chats/${encoded}`)).toBe('/api/v1/chats/[redacted]')
    expect(redactUrl(`/api/v1/chats/${key.replace('pk_', 'pk%255f')}`)).toBe('/api/v1/chats/[redacted]')
    expect(redactUrl(`/x?q=${encodeURIComponent(`Bearer ${key}`)}`)).toBe('/x?q=[redacted]')
    expect(redactUrl(`/api/v1/chats/Bearer%20${key}`)).toBe('/api/v1/chats/[redacted]')
  })

  it('survives malformed percent-encoding', () => {
    expect(redactUrl('/api/v1/chats/%ff')).toBe('/api/v1/chats/%ff')
    expect(redactUrl(`/api/v1/chats/%ff${key}`)).toBe('/api/v1/chats/[redacted]')
    expect(redactUrl('/x?token=%E0%A4%A&y=%')).toBe('/x?token=[redacted]&y=%')
  })

  it('leaves ordinary identifiers alone, even with a similar prefix', () => {
    expect(redactUrl('/api/v1/models/pk_short')).toBe('/api/v1/models/pk_short')
    expect(redactUrl('/api/v1/config/documents/spk_abcdefghijklmnopqrstuvwxyz')).toBe('/api/v1/config/documents/spk_abcdefghijklmnopqrstuvwxyz')
  })
})

describe('serializeRequest', () => {
  it('logs the redacted URL and no headers', () => {
    const logged = serializeRequest({
      method: 'GET',
      url: `/api/v1/chats?api_key=${key}`,
      host: 'localhost',
      ip: '127.0.0.1',
      headers: { authorization: `Bearer ${key}`, cookie: `session=${session}`, 'accept-version': '1' },
      socket: { remotePort: 1234 },
    })
    expect(logged).toEqual({ method: 'GET', url: '/api/v1/chats?api_key=[redacted]', version: '1', host: 'localhost', remoteAddress: '127.0.0.1', remotePort: 1234 })
    expect(JSON.stringify(logged)).not.toContain(key)
    expect(JSON.stringify(logged)).not.toContain(session)
  })
})

describe('request logs of the real app', () => {
  it('never contain a key from the URL or the Authorization header, and keep the path', async () => {
    const log = captureLog()
    const ctx = await createTestApp({ logger: { level: 'trace', stream: log.stream } })
    const { app } = ctx
    try {
      const { key: realKey, auth: headers } = ctx.org('logs')

      const list = await app.inject({ method: 'GET', url: `/api/v1/chats?api_key=${realKey}`, headers })
      expect(list.statusCode).toBe(200)
      const byId = await app.inject({ method: 'GET', url: `/api/v1/chats/${realKey}`, headers })
      expect(byId.statusCode).toBeGreaterThanOrEqual(400)
      expect(byId.statusCode).toBeLessThan(500)
      const encoded = await app.inject({ method: 'GET', url: `/api/v1/chats/${realKey.replace('pk_', 'pk%5F')}?Token=${realKey}`, headers })
      expect(encoded.statusCode).toBeLessThan(500)

      const lines = log.text.trim().split('\n').map((line) => JSON.parse(line) as { req?: { url?: string } })
      const urls = lines.flatMap((line) => (line.req?.url === undefined ? [] : [line.req.url]))
      expect(urls).toEqual(['/api/v1/chats?api_key=[redacted]', '/api/v1/chats/[redacted]', '/api/v1/chats/[redacted]?Token=[redacted]'])
      expect(log.text).not.toContain(realKey)
      expect(log.text).not.toContain(realKey.slice(3))
      expect(log.text.toLowerCase()).not.toContain('bearer')
    } finally {
      await ctx.close()
    }
  })
})
