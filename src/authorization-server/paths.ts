/**
 * Where the authorization server lives in the service: apart from provider.ts, so that routes
 * name its addresses without loading oidc-provider, which is loaded only when the server is on.
 */
export const AUTHORIZATION_SERVER_PATH = '/oidc'

/** Its pages' stylesheet and scripts, relative to the mount. */
export const STYLESHEET_PATH = '/pages.css'
export const SCRIPT_PATH = '/pages.js'
export const WEBAUTHN_SCRIPT_PATH = '/webauthn.js'
