/**
 * Where the authorization server lives in the service: apart from provider.ts, so that routes
 * name its addresses without loading oidc-provider, which is loaded only when the server is on.
 */
export const AUTHORIZATION_SERVER_PATH = '/oidc'

/**
 * Where its interactions' pages are (`<INTERACTION_PATH>/<uid>`), and every address of an
 * interaction below it: the interaction's cookie is sent to no other path.
 */
export const INTERACTION_PATH = `${AUTHORIZATION_SERVER_PATH}/interaction`

/** oidc-provider's authorization and end-session endpoints, relative to the mount. */
export const AUTHORIZATION_PATH = '/auth'
export const END_SESSION_PATH = '/session/end'

/** Where a person enters a device's user code (oidc-provider's code verification), relative to the mount. */
export const DEVICE_PATH = '/device'

/** Its pages' stylesheet and scripts, relative to the mount. */
export const STYLESHEET_PATH = '/pages.css'
export const SCRIPT_PATH = '/pages.js'
export const WEBAUTHN_SCRIPT_PATH = '/webauthn.js'

/**
 * The service's own console (docs/console.md): a client of the authorization server built in,
 * public (PKCE), whose sign-in asks no consent, registered at these addresses of the issuer.
 */
export const CONSOLE_CLIENT_ID = 'console'
export const CONSOLE_PATH = '/console'
export const CONSOLE_CALLBACK_PATH = `${CONSOLE_PATH}/callback`
/** Every signed-in person's own page (docs/console.md), signed in to as the console is. */
export const ACCOUNT_PATH = '/account'
