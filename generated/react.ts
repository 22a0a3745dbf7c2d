/**
 * TanStack Query (v5) hooks for this deployment's stored operations, on top of ./client.ts. Generated
 * by Tributary (gateway/codegen/react.ts) because `codegen.react` is true: do not edit;
 * `npx tributary generate` writes it again. Needs `react` (18 or 19) and `@tanstack/react-query` 5
 * in the application. For browsers (and React Native): never import it from server code.
 *
 * ```tsx
 * import { QueryClient } from '@tanstack/react-query'
 * import { createClient } from './generated/client.js'
 * import { TributaryProvider, useRolesQuery, useQuery } from './generated/react.js'
 *
 * <TributaryProvider client={createClient({ baseUrl: 'http://127.0.0.1:4000' })} queryClient={new QueryClient()}>…</TributaryProvider>
 * const { data, error } = useRolesQuery()
 * const live = useQuery({ operationName: "Roles", liveQuery: true })
 * const { mutate } = useMutation({ operationName: "CreateTodo", onSuccess: () => queryClient.invalidateQueries() })
 * ```
 *
 * Query keys are `[operationName, input]` ({@link queryKey}). Errors are {@link TributaryError}s.
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

import type { CreateTodoVariables, CreateTodoResponse, DeleteTodoVariables, DeleteTodoResponse, MessageCreatedVariables, MessageCreatedResponse, RolesVariables, RolesResponse, TodoAndRolesVariables, TodoAndRolesResponse, TodoByIdVariables, TodoByIdResponse, TodosVariables, TodosResponse, TodoWithRolesVariables, TodoWithRolesResponse } from './client.js'

// ----- the operations, by kind -----

/** The stored queries by name: variables (`input`), data (`response`), whether a variable is required. */
export interface Queries {
  Roles: { input: RolesVariables; response: RolesResponse; requiresInput: false }
  TodoAndRoles: { input: TodoAndRolesVariables; response: TodoAndRolesResponse; requiresInput: false }
  TodoById: { input: TodoByIdVariables; response: TodoByIdResponse; requiresInput: false }
  Todos: { input: TodosVariables; response: TodosResponse; requiresInput: false }
  TodoWithRoles: { input: TodoWithRolesVariables; response: TodoWithRolesResponse; requiresInput: true }
}

/** The stored mutations by name: variables (`input`), data (`response`), whether a variable is required. */
export interface Mutations {
  CreateTodo: { input: CreateTodoVariables; response: CreateTodoResponse; requiresInput: true }
  DeleteTodo: { input: DeleteTodoVariables; response: DeleteTodoResponse; requiresInput: true }
}

/** The stored subscriptions by name: variables (`input`), one event (`response`), whether a variable is required. */
export interface Subscriptions {
  MessageCreated: { input: MessageCreatedVariables; response: MessageCreatedResponse; requiresInput: false }
}

/** Operation name → client method. */
const methods: Record<string, string | undefined> = {
  CreateTodo: "CreateTodo",
  DeleteTodo: "DeleteTodo",
  MessageCreated: "MessageCreated",
  Roles: "Roles",
  TodoAndRoles: "TodoAndRoles",
  TodoById: "TodoById",
  Todos: "Todos",
  TodoWithRoles: "TodoWithRoles",
}

// ----- runtime -----

type Operation = { input: unknown; response: unknown; requiresInput: boolean }
type AnyClient = Record<string, (variables: unknown, options?: CallOptions) => unknown> & { live: Record<string, (variables: unknown, options?: CallOptions) => unknown> }

/** `input` is required when the operation has a required variable, else optional. */
export type InputArg<O extends Operation> = O['requiresInput'] extends true ? { input: O['input'] } : { input?: O['input'] }

/** The query key of an operation: `[operationName, input]`, or `[operationName]` without input (a prefix of every input's key). */
export type TributaryQueryKey = readonly [string] | readonly [string, unknown]

/** TanStack `useQuery` options that the hooks pass through (the query key and function are theirs). */
export type QueryOptions<O extends Operation> = Omit<UseQueryOptions<O['response'], TributaryError, O['response'], TributaryQueryKey>, 'queryKey' | 'queryFn'>

/** Arguments of {@link TributaryHooks.useQuery}. */
export type QueryArgs<N extends keyof Queries> = { operationName: N; liveQuery?: boolean } & InputArg<Queries[N]> & QueryOptions<Queries[N]>

/** The variables that `mutate(...)` takes: optional when the mutation has no required variable. */
export type MutationInput<O extends Operation> = O['requiresInput'] extends true ? O['input'] : O['input'] | void

/** TanStack `useMutation` options that the hooks pass through (the mutation function is theirs). */
export type MutationOptions<O extends Operation> = Omit<UseMutationOptions<O['response'], TributaryError, MutationInput<O>>, 'mutationFn'>

/** Arguments of {@link TributaryHooks.useMutation}. */
export type MutationArgs<N extends keyof Mutations> = { operationName: N } & MutationOptions<Mutations[N]>

/** Options of a subscription hook. */
export interface SubscriptionOptions<T> {
  /** false: no stream is opened (an open one is closed). Default true. */
  enabled?: boolean
  /** Called with each event. */
  onData?: (data: T) => void
  /** Called when the stream fails (the gateway's error, or a network failure as `TRB_CLIENT_NETWORK`). */
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
  if (typeof fn !== 'function') throw new TypeError(`Unknown operation: ${operationName}`)
  return fn
}

/**
 * Reads an event stream while `enabled`: opened again when the key changes, closed on unmount.
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
  /** The client the hooks call (`createClient({ baseUrl })`). */
  client: TributaryClient
  /** Also provides this TanStack QueryClient (else an outer `<QueryClientProvider>` must). */
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

// ----- hooks -----

/** The hooks, bound to one client ({@link createHooks}) or to the {@link TributaryProvider}'s. */
export interface TributaryHooks {
  /** A query (`GET /operations/<name>`), or with `liveQuery: true` its live query (Server-Sent Events). @throws TypeError for an unknown operationName */
  useQuery<N extends keyof Queries>(args: QueryArgs<N>): UseQueryResult<Queries[N]['response'], TributaryError>
  /** `useQuery` with `liveQuery: true`: the cache entry is updated with every result the gateway sends. */
  useLiveQuery<N extends keyof Queries>(args: QueryArgs<N>): UseQueryResult<Queries[N]['response'], TributaryError>
  /** A mutation (`POST /operations/<name>`); `mutate(input)` runs it. */
  useMutation<N extends keyof Mutations>(args: MutationArgs<N>): UseMutationResult<Mutations[N]['response'], TributaryError, MutationInput<Mutations[N]>>
  /** A subscription (`GET /operations/<name>`, Server-Sent Events) while mounted and enabled. */
  useSubscription<N extends keyof Subscriptions>(args: SubscriptionArgs<N>): SubscriptionResult<Subscriptions[N]['response']>
  /** The mutation `CreateTodo`. */
  useCreateTodoMutation(options?: MutationOptions<Mutations["CreateTodo"]>): UseMutationResult<CreateTodoResponse, TributaryError, MutationInput<Mutations["CreateTodo"]>>
  /** The mutation `DeleteTodo`. */
  useDeleteTodoMutation(options?: MutationOptions<Mutations["DeleteTodo"]>): UseMutationResult<DeleteTodoResponse, TributaryError, MutationInput<Mutations["DeleteTodo"]>>
  /** The subscription `MessageCreated`. */
  useMessageCreatedSubscription(input?: MessageCreatedVariables, options?: SubscriptionOptions<MessageCreatedResponse>): SubscriptionResult<MessageCreatedResponse>
  /** The query `Roles`. */
  useRolesQuery(input?: RolesVariables, options?: QueryOptions<Queries["Roles"]>): UseQueryResult<RolesResponse, TributaryError>
  /** The live query `Roles`. */
  useRolesLiveQuery(input?: RolesVariables, options?: QueryOptions<Queries["Roles"]>): UseQueryResult<RolesResponse, TributaryError>
  /** The query `TodoAndRoles`. */
  useTodoAndRolesQuery(input?: TodoAndRolesVariables, options?: QueryOptions<Queries["TodoAndRoles"]>): UseQueryResult<TodoAndRolesResponse, TributaryError>
  /** The live query `TodoAndRoles`. */
  useTodoAndRolesLiveQuery(input?: TodoAndRolesVariables, options?: QueryOptions<Queries["TodoAndRoles"]>): UseQueryResult<TodoAndRolesResponse, TributaryError>
  /** The query `TodoById`. */
  useTodoByIdQuery(input?: TodoByIdVariables, options?: QueryOptions<Queries["TodoById"]>): UseQueryResult<TodoByIdResponse, TributaryError>
  /** The live query `TodoById`. */
  useTodoByIdLiveQuery(input?: TodoByIdVariables, options?: QueryOptions<Queries["TodoById"]>): UseQueryResult<TodoByIdResponse, TributaryError>
  /** The query `Todos`. */
  useTodosQuery(input?: TodosVariables, options?: QueryOptions<Queries["Todos"]>): UseQueryResult<TodosResponse, TributaryError>
  /** The live query `Todos`. */
  useTodosLiveQuery(input?: TodosVariables, options?: QueryOptions<Queries["Todos"]>): UseQueryResult<TodosResponse, TributaryError>
  /** The query `TodoWithRoles`. */
  useTodoWithRolesQuery(input: TodoWithRolesVariables, options?: QueryOptions<Queries["TodoWithRoles"]>): UseQueryResult<TodoWithRolesResponse, TributaryError>
  /** The live query `TodoWithRoles`. */
  useTodoWithRolesLiveQuery(input: TodoWithRolesVariables, options?: QueryOptions<Queries["TodoWithRoles"]>): UseQueryResult<TodoWithRolesResponse, TributaryError>
}

function hooksFor(getClient: () => TributaryClient): TributaryHooks {
  const hooks: Pick<TributaryHooks, 'useQuery' | 'useLiveQuery' | 'useMutation' | 'useSubscription'> = {
    useQuery: (args) => useQueryWith(getClient(), args),
    useLiveQuery: (args) => useQueryWith(getClient(), { ...args, liveQuery: true } as typeof args),
    useMutation: (args) => useMutationWith(getClient(), args),
    useSubscription: (args) => useSubscriptionWith(getClient(), args),
  }
  return {
    ...hooks,
    useCreateTodoMutation: (options?: MutationOptions<Mutations["CreateTodo"]>) => hooks.useMutation({ ...options, operationName: "CreateTodo" }),
    useDeleteTodoMutation: (options?: MutationOptions<Mutations["DeleteTodo"]>) => hooks.useMutation({ ...options, operationName: "DeleteTodo" }),
    useMessageCreatedSubscription: (input?: MessageCreatedVariables, options?: SubscriptionOptions<MessageCreatedResponse>) => hooks.useSubscription({ ...options, operationName: "MessageCreated", input } as SubscriptionArgs<"MessageCreated">),
    useRolesQuery: (input?: RolesVariables, options?: QueryOptions<Queries["Roles"]>) => hooks.useQuery({ ...options, operationName: "Roles", input } as QueryArgs<"Roles">),
    useRolesLiveQuery: (input?: RolesVariables, options?: QueryOptions<Queries["Roles"]>) => hooks.useQuery({ ...options, operationName: "Roles", input, liveQuery: true } as QueryArgs<"Roles">),
    useTodoAndRolesQuery: (input?: TodoAndRolesVariables, options?: QueryOptions<Queries["TodoAndRoles"]>) => hooks.useQuery({ ...options, operationName: "TodoAndRoles", input } as QueryArgs<"TodoAndRoles">),
    useTodoAndRolesLiveQuery: (input?: TodoAndRolesVariables, options?: QueryOptions<Queries["TodoAndRoles"]>) => hooks.useQuery({ ...options, operationName: "TodoAndRoles", input, liveQuery: true } as QueryArgs<"TodoAndRoles">),
    useTodoByIdQuery: (input?: TodoByIdVariables, options?: QueryOptions<Queries["TodoById"]>) => hooks.useQuery({ ...options, operationName: "TodoById", input } as QueryArgs<"TodoById">),
    useTodoByIdLiveQuery: (input?: TodoByIdVariables, options?: QueryOptions<Queries["TodoById"]>) => hooks.useQuery({ ...options, operationName: "TodoById", input, liveQuery: true } as QueryArgs<"TodoById">),
    useTodosQuery: (input?: TodosVariables, options?: QueryOptions<Queries["Todos"]>) => hooks.useQuery({ ...options, operationName: "Todos", input } as QueryArgs<"Todos">),
    useTodosLiveQuery: (input?: TodosVariables, options?: QueryOptions<Queries["Todos"]>) => hooks.useQuery({ ...options, operationName: "Todos", input, liveQuery: true } as QueryArgs<"Todos">),
    useTodoWithRolesQuery: (input: TodoWithRolesVariables, options?: QueryOptions<Queries["TodoWithRoles"]>) => hooks.useQuery({ ...options, operationName: "TodoWithRoles", input } as QueryArgs<"TodoWithRoles">),
    useTodoWithRolesLiveQuery: (input: TodoWithRolesVariables, options?: QueryOptions<Queries["TodoWithRoles"]>) => hooks.useQuery({ ...options, operationName: "TodoWithRoles", input, liveQuery: true } as QueryArgs<"TodoWithRoles">),
  }
}

/**
 * The hooks bound to `client`, for apps without a {@link TributaryProvider} (WunderGraph's `createHooks`):
 * `export const { useQuery, useMutation, useSubscription } = createHooks(createClient({ baseUrl }))`.
 * A TanStack `<QueryClientProvider>` must still be above the components.
 */
export function createHooks(client: TributaryClient): TributaryHooks {
  return hooksFor(() => client)
}

/** The hooks bound to the client of the nearest {@link TributaryProvider}. */
export const {
  useQuery,
  useLiveQuery,
  useMutation,
  useSubscription,
  useCreateTodoMutation,
  useDeleteTodoMutation,
  useMessageCreatedSubscription,
  useRolesQuery,
  useRolesLiveQuery,
  useTodoAndRolesQuery,
  useTodoAndRolesLiveQuery,
  useTodoByIdQuery,
  useTodoByIdLiveQuery,
  useTodosQuery,
  useTodosLiveQuery,
  useTodoWithRolesQuery,
  useTodoWithRolesLiveQuery,
}: TributaryHooks = hooksFor(useTributaryClient)
