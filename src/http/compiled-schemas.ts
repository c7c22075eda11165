/**
 * Compiled route schemas, remembered for the process and compiled when first used. Fastify
 * asks for a compiler in every encapsulated context and compiles each route's schemas with it
 * when the instance starts; every instance (the test suite builds several hundred) compiled
 * the same schemas again. Compiling was most of building an instance: response serializers
 * 63% (1.3–1.9 s each with 75 operations); with those remembered, request validators and the
 * shared schemas' JSON text about 45% of the rest; and compiling every route in a new process
 * about 1.1 s of its first instance's 1.4 s, where a process (a test file, a worker) uses a
 * few of them. A compiled function is reused only for the same route schema, compared as
 * JSON text, under the same shared schemas and options. The first request of an operation
 * pays its compiling (a few milliseconds); `compilePending` compiles the rest now.
 */

/** What Fastify hands a compiler for one route: its schema and, for validators, the part of the request. */
interface RouteSchema { schema?: unknown, httpPart?: string }

type Compiler<Route, Compiled> = (route: Route) => Compiled

const idsByText = new Map<string, number>()
const ids = new WeakMap<object, number>()

/**
 * A number per distinct JSON text, the text computed once per schema object: keys made of these
 * stay short. Keys made of the texts themselves (the shared schemas' came to 93 KB) were built
 * and hashed anew in every context of every instance, about half of building one.
 */
function idOf (schema: unknown): number {
  const isObject = typeof schema === 'object' && schema !== null
  const known = isObject ? ids.get(schema) : undefined
  if (known !== undefined) return known
  const text = JSON.stringify(schema) ?? ''
  let id = idsByText.get(text)
  if (id === undefined) {
    id = idsByText.size
    idsByText.set(text, id)
  }
  if (isObject) ids.set(schema, id)
  return id
}

/** Compilings asked for and not yet done, by first use or `compilePending`. */
const pending = new Set<() => unknown>()

/**
 * A function that compiles on its first call, then calls what it compiled. Ajv reports a
 * failed validation's problems on the validator (`errors`), which Fastify reads after the
 * call: they are copied.
 */
function compiledOnFirstCall<Compiled> (compile: () => Compiled): Compiled {
  type Callable = ((data: unknown) => unknown) & { errors?: unknown }
  let compiled: Callable | undefined
  const compileNow = (): Callable => {
    if (compiled === undefined) {
      compiled = compile() as Callable
      pending.delete(compileNow)
    }
    return compiled
  }
  pending.add(compileNow)
  const call: Callable = (data) => {
    const target = compiled ?? compileNow()
    const result = target(data)
    call.errors = target.errors
    return result
  }
  return call as Compiled
}

/** Compiles every route schema not yet compiled (a schema that cannot compile throws here); answers how many. */
export function compilePending (): number {
  const compilings = [...pending]
  for (const compileNow of compilings) compileNow()
  return compilings.length
}

/**
 * `build` (a compiler factory, as Fastify's `compilersFactory` holds) with its compilers and
 * their output remembered. Shared schemas come as a new object per context holding the same
 * schema objects, so they are compared by their text, each computed once.
 */
export function rememberingCompilers<Shared extends object | undefined, Options, Route extends RouteSchema, Compiled> (
  build: (sharedSchemas: Shared, options: Options) => Compiler<Route, Compiled>
): (sharedSchemas: Shared, options: Options) => Compiler<Route, Compiled> {
  const compilers = new Map<string, Compiler<Route, Compiled>>()
  return (sharedSchemas, options) => {
    const key = `${Object.values(sharedSchemas ?? {}).map(idOf).join(',')} ${JSON.stringify(options ?? null)}`
    let remembering = compilers.get(key)
    if (remembering === undefined) {
      const compile = build(sharedSchemas, options)
      const compiled = new Map<string, Compiled>()
      remembering = (route) => {
        const routeKey = `${route.httpPart ?? ''} ${idOf(route.schema)}`
        let result = compiled.get(routeKey)
        if (result === undefined) {
          result = compiledOnFirstCall(() => compile(route))
          compiled.set(routeKey, result)
        }
        return result
      }
      compilers.set(key, remembering)
    }
    return remembering
  }
}
