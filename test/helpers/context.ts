/** Anything with tap's teardown, so helpers work in any (sub)test. */
export interface TestContext {
  teardown: (fn: () => unknown) => void
}
