/**
 * Every string the console's pages show (docs/console.md): one table, so that a translation is
 * another table of the same keys. `%s` is filled in order by `say`.
 */
export const STRINGS = {
  console: 'Console',
  skipToContent: 'Skip to content',
  signIn: 'Sign in',
  signOut: 'Sign out',
  signedInAs: 'Signed in as %s',
  signInIntro: 'The console is for the service\'s operators. Sign in with your account of this service.',
  signInUnavailable: 'The console signs in through the service\'s authorization server, which is off: set JWT_ISSUER to this service\'s address (docs/operations.md).',
  signInUnfinished: 'The sign-in did not finish. Start again.',
  signInAgain: 'Sign in again',
  notAllowedTitle: 'Not allowed',
  notAllowed: 'Your account may not see this page: %s.',
  notFoundTitle: 'Not found',
  notFound: 'There is no such page, or no such %s.',
  formExpired: 'This form has expired or was not sent from this console. Go back, reload the page and try again.',
  somethingWrong: 'Something went wrong',
  users: 'Users',
  searchUsers: 'Search by name or exact e-mail address',
  search: 'Search',
  noUsers: 'No user matches.',
  nextPage: 'Next page',
  firstPage: 'First page',
  name: 'Name',
  email: 'E-mail',
  verified: 'Verified',
  created: 'Created',
  yes: 'yes',
  no: 'no',
  user: 'User',
  roles: 'Roles',
  noRoles: 'none',
  status: 'Status',
  active: 'Active',
  suspendedSince: 'Suspended since %s',
  suspendedUntil: 'Suspended since %s, until %s',
  suspend: 'Suspend',
  suspendReason: 'Reason (shown to administrators only)',
  suspendUntil: 'Until (optional, UTC, as 2030-01-31T12:00)',
  liftSuspension: 'Lift the suspension',
  suspended: 'The account is suspended: it cannot sign in, and its sessions have ended.',
  suspensionLifted: 'The suspension is lifted.',
  manageUsersOnly: 'Suspending needs the manage_users permission (administrators).',
  backToUsers: 'Back to users'
} as const

export type StringKey = keyof typeof STRINGS

/** The string `key`, with each `%s` replaced by the next of `values` (not escaped: the page escapes). */
export function say (key: StringKey, ...values: string[]): string {
  let index = 0
  return STRINGS[key].replace(/%s/g, () => values[index++] ?? '')
}
