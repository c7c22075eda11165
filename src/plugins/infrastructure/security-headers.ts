import fp from 'fastify-plugin'
import helmet, { contentSecurityPolicy, type HelmetOptions } from 'helmet'

/**
 * The security headers (docs/api.md, "Security headers"), exactly, configured through helmet:
 * its other headers are off so that the set is fixed, and `X-XSS-Protection`, which helmet
 * only sends as `0`, is set here.
 */
const HELMET_OPTIONS: Readonly<HelmetOptions> = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      frameAncestors: ["'none'"],
      scriptSrc: ["'self'", "'unsafe-inline'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", 'data:', 'https:']
    }
  },
  strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true, preload: false },
  xFrameOptions: { action: 'deny' },
  xContentTypeOptions: true,
  xXssProtection: false,
  crossOriginEmbedderPolicy: false,
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xPoweredBy: true
}

type Directives = NonNullable<Exclude<HelmetOptions['contentSecurityPolicy'], boolean | undefined>['directives']>

/** A response that records the headers helmet sets, to compute them once. */
function recording (headers: Record<string, string>) {
  return {
    setHeader: (name: string, value: string) => { headers[name.toLowerCase()] = String(value) },
    removeHeader: (name: string) => { delete headers[name.toLowerCase()] }
  }
}

/**
 * The documentation pages' CSP (docs/api.md, "Health and documentation"): the API's, except that
 * images come only from the service (the pages load nothing from elsewhere) and, for ReDoc,
 * whose search runs in a worker made from a `blob:` URL, `worker-src blob:`. The API's own CSP
 * stays exactly as the specification gives it.
 */
export function documentationCsp ({ workers }: { workers: boolean }): string {
  const directives: Directives = {
    defaultSrc: ["'self'"],
    frameAncestors: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    ...(workers && { workerSrc: ['blob:'] })
  }
  const headers: Record<string, string> = {}
  contentSecurityPolicy({ useDefaults: false, directives })({} as never, recording(headers) as never, () => {})
  return headers['content-security-policy'] ?? ''
}

/**
 * Helmet's headers do not depend on the request, yet @fastify/helmet rebuilds helmet (and
 * re-parses the CSP) on every request. They are computed once here, by running helmet
 * against a recording response, and sent from that object.
 */
function computeSecurityHeaders (): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {}
  helmet(HELMET_OPTIONS)({} as never, recording(headers) as never, () => {})
  headers['x-xss-protection'] = '1; mode=block'
  // Responses carry tokens and personal data: no cache may keep them (docs/api.md, "Security
  // headers"). Static documentation assets set their own caching when sent.
  headers['cache-control'] = 'no-store'
  return Object.freeze(headers)
}

/** The header set, for this hook and for answers given before any hook runs (error-handler.ts). */
export const SECURITY_HEADERS = computeSecurityHeaders()

/**
 * On every response: the hook runs first on every request, so errors, 404s, 429s and
 * preflights carry them. Callback-style: nothing to wait for, so no promise per request.
 */
export default fp(async (fastify) => {
  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS)
    done()
  })
}, { name: 'security-headers' })
