import { describe, expect, it } from 'vitest'
import { assertAllowedAddresses, createUpstreamGuard, DestinationRefusedError, isPublicAddress, type CallerDestination } from '../../../src/core/upstream-guard'
import { createGateway } from '../../../src/gateway/gateway'

const AZURE: CallerDestination = { family: 'azure', hostSuffixes: ['openai.azure.com'] }
const ANY_PUBLIC_NAME: CallerDestination = { family: 'web', hostSuffixes: [] }

const refusal = (run: () => unknown): string => {
  try {
    run()
  } catch (error) {
    if (error instanceof DestinationRefusedError) return error.reason
    throw error
  }
  throw new Error('not refused')
}

describe('upstream guard: the URL', () => {
  const guard = createUpstreamGuard()

  it('accepts an https URL on the default port under the family suffix, and returns it parsed', () => {
    expect(guard.checkUrl('https://Fabrikam.OpenAI.azure.com:443/openai/v1', AZURE).hostname).toBe('fabrikam.openai.azure.com')
    expect(guard.checkUrl('https://files.example.test/a.png', ANY_PUBLIC_NAME).hostname).toBe('files.example.test')
  })

  it.each([
    ['http://127.0.0.1/', 'must use https'],
    ['ftp://fabrikam.openai.azure.com/', 'must use https'],
    ['file:///etc/passwd', 'must use https'],
    ['not a url', 'must be a valid URL'],
    ['https://127.0.0.1/', 'the host must be a DNS name, not an IP address'],
    ['https://2130706433/', 'the host must be a DNS name, not an IP address'],
    ['https://0x7f000001/', 'the host must be a DNS name, not an IP address'],
    ['https://0x7f.1/', 'the host must be a DNS name, not an IP address'],
    ['https://0177.0.0.1/', 'the host must be a DNS name, not an IP address'],
    ['https://127.1/', 'the host must be a DNS name, not an IP address'],
    ['https://[::1]/', 'the host must be a DNS name, not an IP address'],
    ['https://[::ffff:127.0.0.1]/', 'the host must be a DNS name, not an IP address'],
    ['https://localhost/', 'the host must be a public DNS name'],
    ['https://api.localhost/', 'the host must be a public DNS name'],
    ['https://printer.local/', 'the host must be a public DNS name'],
    ['https://metadata.google.internal/', 'the host must be a public DNS name'],
    ['https://files.example.test./', 'the host must be a public DNS name'],
    ['https://single-label/', 'the host must be a public DNS name'],
    ['https://user@files.example.test/', 'must not carry a user name or password'],
    ['https://files.example.test:8443/', 'must use the default port'],
  ])('refuses %s', (url, reason) => {
    expect(refusal(() => guard.checkUrl(url, ANY_PUBLIC_NAME))).toBe(reason)
  })

  it('keeps hosts inside the family, whatever the case or a look-alike suffix', () => {
    expect(refusal(() => guard.checkUrl('https://openai.azure.com/', AZURE))).toBe('the host must be under *.openai.azure.com')
    expect(refusal(() => guard.checkUrl('https://evil-openai.azure.com/', AZURE))).toBe('the host must be under *.openai.azure.com')
    expect(refusal(() => guard.checkUrl('https://fabrikam.openai.azure.com.evil.test/', AZURE))).toBe('the host must be under *.openai.azure.com')
  })

  it('follows the operator: http, extra ports and extra suffixes, but never IP literals', () => {
    const open = createUpstreamGuard({ allowHttp: true, allowedPorts: [8443], extraHostSuffixes: { azure: ['openai.azure.us'] } })
    expect(open.checkUrl('http://fabrikam.openai.azure.us:8443/', AZURE).port).toBe('8443')
    expect(refusal(() => open.checkUrl('http://fabrikam.openai.azure.com:8080/', AZURE))).toBe('must use the default port or an allowed one')
    expect(refusal(() => open.checkUrl('http://127.0.0.1:8443/', AZURE))).toBe('the host must be a DNS name, not an IP address')
    expect(refusal(() => open.checkUrl('gopher://fabrikam.openai.azure.com/', AZURE))).toBe('must use https or http')
  })
})

describe('upstream guard: the addresses', () => {
  it.each(['127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', '::127.0.0.1', 'not-an-address'])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false)
  })

  it('allows loopback only where the operator said so, by flag or by range', () => {
    expect(createUpstreamGuard().isAllowedAddress('127.0.0.1')).toBe(false)
    expect(createUpstreamGuard({ allowPrivateNetworks: true }).isAllowedAddress('127.0.0.1')).toBe(true)
    expect(createUpstreamGuard({ allowPrivateNetworks: true }).isAllowedAddress('::1')).toBe(true)
    const ranges = createUpstreamGuard({ allowPrivateNetworks: ['127.0.0.0/8'] })
    expect(ranges.isAllowedAddress('127.0.0.1')).toBe(true)
    expect(ranges.isAllowedAddress('::ffff:127.0.0.1')).toBe(true)
    expect(ranges.isAllowedAddress('::1')).toBe(false)
  })

  it('refuses an empty answer and any answer with a refused address in it', () => {
    const guard = createUpstreamGuard({ allowPrivateNetworks: ['127.0.0.1/32'] })
    expect(() => assertAllowedAddresses(guard, [{ address: '127.0.0.1', family: 4 }])).not.toThrow()
    expect(refusal(() => assertAllowedAddresses(guard, []))).toBe('the host must resolve')
    expect(refusal(() => assertAllowedAddresses(guard, [{ address: '127.0.0.1', family: 4 }, { address: '127.0.0.2', family: 4 }]))).toBe(
      'the host must resolve to public addresses only',
    )
  })

  it('refuses a malformed range at start-up', () => {
    expect(() => createUpstreamGuard({ allowPrivateNetworks: ['127.0.0.0/99'] })).toThrow('"127.0.0.0/99" is not a CIDR range')
    expect(() => createGateway({ logger: false, upstreamGuard: { allowPrivateNetworks: ['loopback'] } })).toThrow(
      'options.upstreamGuard.allowPrivateNetworks',
    )
  })
})
