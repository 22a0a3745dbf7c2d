/**
 * Renders `generated/react.ts` (written when `codegen.react` is true): TanStack Query v5 hooks for
 * every served stored operation, on top of the typed client of `generated/client.ts`.
 *
 * - `useQuery({ operationName, input, enabled, liveQuery, ...TanStack options })`: a TanStack
 *   `useQuery` whose query key is `[operationName, input]` (`[operationName]` without input, so
 *   `invalidateQueries({ queryKey: queryKey({ operationName }) })` reaches every input) and whose
 *   query function is the client's GET. With `liveQuery: true` it opens the live query
 *   (`?live=true`, Server-Sent Events) instead of fetching, and writes each result into the cache
 *   under the same key;
 * - `useLiveQuery(args)`: `useQuery` with `liveQuery: true`;
 * - `useMutation({ operationName, ...TanStack options })`: a TanStack `useMutation` over the client's POST;
 * - `useSubscription({ operationName, input, enabled, onData, onError })`: the client's SSE
 *   subscription, each event written into the query cache under `[operationName, input]`; returns
 *   `{ data, error, isLoading, isSubscribed }`; unmounting (or a new input) closes the stream;
 * - one hook per operation besides: `use<Op>Query(input, options)`, `use<Op>LiveQuery`,
 *   `use<Op>Mutation(options)`, `use<Op>Subscription(input, options)`.
 *
 * The hooks come from `createHooks(client)` (bound to that client, as in WunderGraph's
 * `@wundergraph/react-query`), or are exported directly and read the client of `<TributaryProvider client={…}>`.
 * The file imports `react` and `@tanstack/react-query`, which the application installs: they are
 * optional peer dependencies of the package, never imported by the gateway itself.
 */
import type { Gateway } from '../runtime.js'
import type { CompiledOperation } from '../operations/compile.js'
import { hasRequired, namesOf, propertyKey, servedOperations, type Names } from './client.js'

/** The hooks' runtime: the same for every deployment (only the operation tables differ). */
const RUNTIME = `// ----- runtime -----

type Operation = { input: unknown; response: unknown; requiresInput: boolean }
type AnyClient = Record<string, (variables: unknown, options?: CallOptions) => unknown> & { live: Record<string, (variables: unknown, options?: CallOptions) => unknown> }

/** \`input\` is required when the operation has a required variable, else optional. */
export type InputArg<O extends Operation> = O['requiresInput'] extends true ? { input: O['input'] } : { input?: O['input'] }

/** The query key of an operation: \`[operationName, input]\`, or \`[operationName]\` without input (a prefix of every input's key). */
export type TributaryQueryKey = readonly [string] | readonly [string, unknown]

/** TanStack \`useQuery\` options that the hooks pass through (the query key and function are theirs). */
export type QueryOptions<O extends Operation> = Omit<UseQueryOptions<O['response'], TributaryError, O['response'], TributaryQueryKey>, 'queryKey' | 'queryFn'>

/** Arguments of {@link TributaryHooks.useQuery}. */
export type QueryArgs<N extends keyof Queries> = { operationName: N; liveQuery?: boolean } & InputArg<Queries[N]> & QueryOptions<Queries[N]>

/** The variables that \`mutate(...)\` takes: optional when the mutation has no required variable. */
export type MutationInput<O extends Operation> = O['requiresInput'] extends true ? O['input'] : O['input'] | void

/** TanStack \`useMutation\` options that the hooks pass through (the mutation function is theirs). */
export type MutationOptions<O extends Operation> = Omit<UseMutationOptions<O['response'], TributaryError, MutationInput<O>>, 'mutationFn'>

/** Arguments of {@link TributaryHooks.useMutation}. */
export type MutationArgs<N extends keyof Mutations> = { operationName: N } & MutationOptions<Mutations[N]>

/** Options of a subscription hook. */
export interface SubscriptionOptions<T> {
  /** false: no stream is opened (an open one is closed). Default true. */
  enabled?: boolean
  /** Called with each event. */
  onData?: (data: T) => void
  /** Called when the stream fails (the gateway's error, or a network failure as \`TRB_CLIENT_NETWORK\`). */
  onError?: (error: TributaryError) => void
}

/** Arguments of {@link TributaryHooks.useSubscription}. */
export type SubscriptionArgs<N extends keyof Subscriptions> = { operationName: N } & InputArg<Subscriptions[N]> & SubscriptionOptions<Subscriptions[N]['response']>

/** What a subscription hook returns. */
export interface SubscriptionResult<T> {
  /** The last event, shared through the query cache by every hook of the same operation and input. */
  data: T | undefined
  /** The stream's failure, or null. */
  error: TributaryError | null
  /** Enabled, and neither an event nor an error has arrived yet. */
  isLoading: boolean
  /** At least one event has arrived and the stream is still open. */
  isSubscribed: boolean
}

/** The query key of an operation and input (see {@link TributaryQueryKey}). */
export function queryKey(args: { operationName: string; input?: unknown }): TributaryQueryKey {
  return args.input === undefined ? [args.operationName] : [args.operationName, args.input]
}

function asTributaryError(err: unknown): TributaryError {
  if (err instanceof TributaryError) return err
  return new TributaryError(0, [{ message: err instanceof Error ? err.message : String(err), extensions: { code: 'TRB_CLIENT_NETWORK' } }])
}

function method(client: TributaryClient, operationName: string, live = false): (variables: unknown, options?: CallOptions) => unknown {
  const name = Object.prototype.hasOwnProperty.call(methods, operationName) ? methods[operationName] : undefined
  const table = live ? (client as unknown as AnyClient).live : (client as unknown as AnyClient)
  const fn = name === undefined ? undefined : table[name]
  if (typeof fn !== 'function') throw new TypeError(\`Unknown operation: \${operationName}\`)
  return fn
}

/**
 * Reads an event stream while \`enabled\`: opened again when the key changes, closed on unmount.
 * @returns the stream's error (null while it is fine) and whether an event arrived on the open stream.
 */
function useEventStream(key: TributaryQueryKey, enabled: boolean, open: (signal: AbortSignal) => AsyncIterable<unknown>, onData: (data: unknown) => void, onError?: (error: TributaryError) => void): { error: TributaryError | null; isSubscribed: boolean } {
  const latest = useRef({ open, onData, onError })
  latest.current = { open, onData, onError }
  const [state, setState] = useState<{ error: TributaryError | null; isSubscribed: boolean }>({ error: null, isSubscribed: false })
  const hash = hashKey(key)
  useEffect(() => {
    if (!enabled) return undefined
    const controller = new AbortController()
    setState({ error: null, isSubscribed: false })
    void (async () => {
      try {
        for await (const data of latest.current.open(controller.signal)) {
          if (controller.signal.aborted) return
          setState((s) => (s.isSubscribed && s.error === null ? s : { error: null, isSubscribed: true }))
          latest.current.onData(data)
        }
        if (!controller.signal.aborted) setState({ error: null, isSubscribed: false })
      } catch (err) {
        if (controller.signal.aborted) return
        const error = asTributaryError(err)
        setState({ error, isSubscribed: false })
        latest.current.onError?.(error)
      }
    })()
    return () => controller.abort()
  }, [hash, enabled])
  return state
}

function useQueryWith<N extends keyof Queries>(client: TributaryClient, args: QueryArgs<N>): UseQueryResult<Queries[N]['response'], TributaryError> {
  const { operationName, input, liveQuery, enabled, ...options } = args as QueryArgs<N> & { input?: unknown }
  const key = queryKey({ operationName, input })
  const queryClient = useQueryClient()
  const live = liveQuery === true && enabled !== false
  const result = useTanstackQuery<Queries[N]['response'], TributaryError, Queries[N]['response'], TributaryQueryKey>({
    ...options,
    queryKey: key,
    // A live query is fed by its stream; refetch() still runs one plain GET.
    enabled: liveQuery === true ? false : enabled,
    queryFn: ({ signal }) =>
      (method(client, operationName)(input, { signal }) as Promise<Queries[N]['response']>).catch((err: unknown) => {
        throw asTributaryError(err)
      }),
  })
  const stream = useEventStream(
    key,
    live,
    (signal) => method(client, operationName, true)(input, { signal }) as AsyncIterable<unknown>,
    (data) => queryClient.setQueryData(key, data),
  )
  if (stream.error === null) return result
  return { ...result, error: stream.error, isError: true, status: 'error' } as UseQueryResult<Queries[N]['response'], TributaryError>
}

function useMutationWith<N extends keyof Mutations>(client: TributaryClient, args: MutationArgs<N>): UseMutationResult<Mutations[N]['response'], TributaryError, MutationInput<Mutations[N]>> {
  const { operationName, ...options } = args
  return useTanstackMutation<Mutations[N]['response'], TributaryError, MutationInput<Mutations[N]>>({
    mutationKey: [operationName],
    ...options,
    mutationFn: (input) =>
      (method(client, operationName)(input ?? undefined) as Promise<Mutations[N]['response']>).catch((err: unknown) => {
        throw asTributaryError(err)
      }),
  })
}

function useSubscriptionWith<N extends keyof Subscriptions>(client: TributaryClient, args: SubscriptionArgs<N>): SubscriptionResult<Subscriptions[N]['response']> {
  const { operationName, input, enabled = true, onData, onError } = args as SubscriptionArgs<N> & { input?: unknown }
  const key = queryKey({ operationName, input })
  const queryClient = useQueryClient()
  // The last event lives in the query cache: every hook of the same key shares it.
  const { data } = useTanstackQuery<Subscriptions[N]['response'], TributaryError, Subscriptions[N]['response'], TributaryQueryKey>({ queryKey: key, queryFn: skipToken })
  const stream = useEventStream(
    key,
    enabled,
    (signal) => method(client, operationName)(input, { signal }) as AsyncIterable<unknown>,
    (event) => {
      queryClient.setQueryData(key, event)
      onData?.(event as Subscriptions[N]['response'])
    },
    onError,
  )
  return { data, error: stream.error, isLoading: enabled && !stream.isSubscribed && stream.error === null, isSubscribed: stream.isSubscribed }
}

const ClientContext = createContext<TributaryClient | null>(null)

/** Props of {@link TributaryProvider}. */
export interface TributaryProviderProps {
  /** The client the hooks call (\`createClient({ baseUrl })\`). */
  client: TributaryClient
  /** Also provides this TanStack QueryClient (else an outer \`<QueryClientProvider>\` must). */
  queryClient?: QueryClient
  children?: ReactNode
}

/** Provides the client to the hooks exported by this file (and a QueryClient when given one). */
export function TributaryProvider(props: TributaryProviderProps): ReactElement {
  const inner = createElement(ClientContext.Provider, { value: props.client }, props.children)
  return props.queryClient ? createElement(QueryClientProvider, { client: props.queryClient }, inner) : inner
}

/**
 * The client of the nearest {@link TributaryProvider}.
 * @throws Error outside a TributaryProvider.
 */
export function useTributaryClient(): TributaryClient {
  const client = useContext(ClientContext)
  if (client === null) throw new Error('No Tributary client: wrap the component in <TributaryProvider client={createClient(...)}>, or use createHooks(client)')
  return client
}
`

/** The hooks of one operation: `main` (`use<Op>Query`, `…Mutation`, `…Subscription`) and, for a query, `live`. */
interface HookNames {
  main: string
  live?: string
}

/**
 * The per-operation hook names, unique in the file: `use<Type>Query` and `use<Type>LiveQuery`,
 * `use<Type>Mutation`, `use<Type>Subscription`; a name already taken (`TodosLive`'s query and
 * `Todos`' live query) gets `_2`, `_3`….
 */
export function hookNamesOf(ops: readonly CompiledOperation[], names: Map<CompiledOperation, Names>): Map<CompiledOperation, HookNames> {
  const used = new Set(['useQuery', 'useLiveQuery', 'useMutation', 'useSubscription', 'useTributaryClient'])
  const unique = (name: string): string => {
    let candidate = name
    for (let i = 2; used.has(candidate); i++) candidate = `${name}_${i}`
    used.add(candidate)
    return candidate
  }
  const out = new Map<CompiledOperation, HookNames>()
  // Main hooks first, so that a live hook never takes the plain name of another operation's query.
  for (const op of ops) out.set(op, { main: unique(`use${names.get(op)!.type}${op.kind === 'query' ? 'Query' : op.kind === 'mutation' ? 'Mutation' : 'Subscription'}`) })
  for (const op of ops) if (op.kind === 'query') out.get(op)!.live = unique(`use${names.get(op)!.type}LiveQuery`)
  return out
}

/**
 * Renders `generated/react.ts` for the served (non-internal) operations of a gateway.
 * @returns TypeScript source (no JSX) that compiles under `strict` next to `client.ts`, with `react`
 *   and `@tanstack/react-query` v5 (and `@types/react`) installed.
 */
export function renderReactHooks(gateway: Gateway): string {
  const ops = servedOperations(gateway)
  const names = namesOf(ops)
  const n = (op: CompiledOperation) => names.get(op)!
  const hookNames = hookNamesOf(ops, names)
  const h = (op: CompiledOperation) => hookNames.get(op)!
  const key = (op: CompiledOperation) => propertyKey(op.name)
  const lit = (op: CompiledOperation) => JSON.stringify(op.name)
  const firstQuery = ops.find((o) => o.kind === 'query')
  const firstMutation = ops.find((o) => o.kind === 'mutation')
  const out: string[] = []
  out.push(`/**
 * TanStack Query (v5) hooks for this deployment's stored operations, on top of ./client.ts. Generated
 * by Tributary (gateway/codegen/react.ts) because \`codegen.react\` is true: do not edit;
 * \`npx tributary generate\` writes it again. Needs \`react\` (18 or 19) and \`@tanstack/react-query\` 5
 * in the application. For browsers (and React Native): never import it from server code.
 *
 * \`\`\`tsx
 * import { QueryClient } from '@tanstack/react-query'
 * import { createClient } from './generated/client.js'
 * import { TributaryProvider${firstQuery ? `, ${h(firstQuery).main}` : ''}, useQuery } from './generated/react.js'
 *
 * <TributaryProvider client={createClient({ baseUrl: 'http://127.0.0.1:4000' })} queryClient={new QueryClient()}>…</TributaryProvider>
${firstQuery ? ` * const { data, error } = ${h(firstQuery).main}(${hasRequired(firstQuery) ? '{ ... }' : ''})\n * const live = useQuery({ operationName: ${lit(firstQuery)}, liveQuery: true })\n` : ''}${firstMutation ? ` * const { mutate } = useMutation({ operationName: ${lit(firstMutation)}, onSuccess: () => queryClient.invalidateQueries() })\n` : ''} * \`\`\`
 *
 * Query keys are \`[operationName, input]\` ({@link queryKey}). Errors are {@link TributaryError}s.
 */
/* eslint-disable */
import { createContext, createElement, useContext, useEffect, useRef, useState, type ReactElement, type ReactNode } from 'react'
import {
  hashKey,
  QueryClientProvider,
  skipToken,
  useMutation as useTanstackMutation,
  useQuery as useTanstackQuery,
  useQueryClient,
  type QueryClient,
  type UseMutationOptions,
  type UseMutationResult,
  type UseQueryOptions,
  type UseQueryResult,
} from '@tanstack/react-query'
import { TributaryError, type CallOptions, type TributaryClient } from './client.js'
`)
  const typeImports = ops.flatMap((op) => [`${n(op).type}Variables`, `${n(op).type}Response`])
  if (typeImports.length) out.push(`import type { ${typeImports.join(', ')} } from './client.js'\n`)

  out.push(`// ----- the operations, by kind -----\n`)
  for (const [kind, title] of [['query', 'Queries'], ['mutation', 'Mutations'], ['subscription', 'Subscriptions']] as const) {
    const list = ops.filter((op) => op.kind === kind)
    out.push(`/** The stored ${kind === 'query' ? 'querie' : kind}s by name: variables (\`input\`), ${kind === 'subscription' ? 'one event' : 'data'} (\`response\`), whether a variable is required. */`)
    if (list.length === 0) {
      out.push(`export interface ${title} {}\n`)
      continue
    }
    out.push(`export interface ${title} {`)
    for (const op of list) out.push(`  ${key(op)}: { input: ${n(op).type}Variables; response: ${n(op).type}Response; requiresInput: ${hasRequired(op)} }`)
    out.push(`}\n`)
  }
  out.push(`/** Operation name → client method. */`)
  out.push(`const methods: Record<string, string | undefined> = {`)
  for (const op of ops) out.push(`  ${key(op)}: ${JSON.stringify(n(op).method)},`)
  out.push(`}\n`)

  out.push(RUNTIME)

  out.push(`// ----- hooks -----

/** The hooks, bound to one client ({@link createHooks}) or to the {@link TributaryProvider}'s. */
export interface TributaryHooks {
  /** A query (\`GET /operations/<name>\`), or with \`liveQuery: true\` its live query (Server-Sent Events). @throws TypeError for an unknown operationName */
  useQuery<N extends keyof Queries>(args: QueryArgs<N>): UseQueryResult<Queries[N]['response'], TributaryError>
  /** \`useQuery\` with \`liveQuery: true\`: the cache entry is updated with every result the gateway sends. */
  useLiveQuery<N extends keyof Queries>(args: QueryArgs<N>): UseQueryResult<Queries[N]['response'], TributaryError>
  /** A mutation (\`POST /operations/<name>\`); \`mutate(input)\` runs it. */
  useMutation<N extends keyof Mutations>(args: MutationArgs<N>): UseMutationResult<Mutations[N]['response'], TributaryError, MutationInput<Mutations[N]>>
  /** A subscription (\`GET /operations/<name>\`, Server-Sent Events) while mounted and enabled. */
  useSubscription<N extends keyof Subscriptions>(args: SubscriptionArgs<N>): SubscriptionResult<Subscriptions[N]['response']>`)
  for (const op of ops) {
    const t = n(op).type
    const input = `input${hasRequired(op) ? '' : '?'}: ${t}Variables`
    if (op.kind === 'query') {
      out.push(`  /** The query \`${op.name}\`. */`)
      out.push(`  ${h(op).main}(${input}, options?: QueryOptions<Queries[${lit(op)}]>): UseQueryResult<${t}Response, TributaryError>`)
      out.push(`  /** The live query \`${op.name}\`. */`)
      out.push(`  ${h(op).live}(${input}, options?: QueryOptions<Queries[${lit(op)}]>): UseQueryResult<${t}Response, TributaryError>`)
    } else if (op.kind === 'mutation') {
      out.push(`  /** The mutation \`${op.name}\`. */`)
      out.push(`  ${h(op).main}(options?: MutationOptions<Mutations[${lit(op)}]>): UseMutationResult<${t}Response, TributaryError, MutationInput<Mutations[${lit(op)}]>>`)
    } else {
      out.push(`  /** The subscription \`${op.name}\`. */`)
      out.push(`  ${h(op).main}(${input}, options?: SubscriptionOptions<${t}Response>): SubscriptionResult<${t}Response>`)
    }
  }
  out.push(`}

function hooksFor(getClient: () => TributaryClient): TributaryHooks {
  const hooks: Pick<TributaryHooks, 'useQuery' | 'useLiveQuery' | 'useMutation' | 'useSubscription'> = {
    useQuery: (args) => useQueryWith(getClient(), args),
    useLiveQuery: (args) => useQueryWith(getClient(), { ...args, liveQuery: true } as typeof args),
    useMutation: (args) => useMutationWith(getClient(), args),
    useSubscription: (args) => useSubscriptionWith(getClient(), args),
  }
  return {
    ...hooks,`)
  for (const op of ops) {
    const t = n(op).type
    const input = `input${hasRequired(op) ? '' : '?'}: ${t}Variables`
    if (op.kind === 'query') {
      out.push(`    ${h(op).main}: (${input}, options?: QueryOptions<Queries[${lit(op)}]>) => hooks.useQuery({ ...options, operationName: ${lit(op)}, input } as QueryArgs<${lit(op)}>),`)
      out.push(`    ${h(op).live}: (${input}, options?: QueryOptions<Queries[${lit(op)}]>) => hooks.useQuery({ ...options, operationName: ${lit(op)}, input, liveQuery: true } as QueryArgs<${lit(op)}>),`)
    } else if (op.kind === 'mutation') {
      out.push(`    ${h(op).main}: (options?: MutationOptions<Mutations[${lit(op)}]>) => hooks.useMutation({ ...options, operationName: ${lit(op)} }),`)
    } else {
      out.push(`    ${h(op).main}: (${input}, options?: SubscriptionOptions<${t}Response>) => hooks.useSubscription({ ...options, operationName: ${lit(op)}, input } as SubscriptionArgs<${lit(op)}>),`)
    }
  }
  out.push(`  }
}

/**
 * The hooks bound to \`client\`, for apps without a {@link TributaryProvider} (WunderGraph's \`createHooks\`):
 * \`export const { useQuery, useMutation, useSubscription } = createHooks(createClient({ baseUrl }))\`.
 * A TanStack \`<QueryClientProvider>\` must still be above the components.
 */
export function createHooks(client: TributaryClient): TributaryHooks {
  return hooksFor(() => client)
}

/** The hooks bound to the client of the nearest {@link TributaryProvider}. */
export const {
  useQuery,
  useLiveQuery,
  useMutation,
  useSubscription,`)
  for (const op of ops) out.push(`  ${[h(op).main, h(op).live].filter(Boolean).join(',\n  ')},`)
  out.push(`}: TributaryHooks = hooksFor(useTributaryClient)`)
  return out.join('\n') + '\n'
}
