/**
 * An identity provider's answer the service refuses (a SAML response, an OpenID provider's ID
 * token or authorization response): the message says which check failed, for the audit log, not
 * the browser.
 */
export class IdpRefusal extends Error {}
