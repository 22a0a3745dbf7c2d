/**
 * The `tributary-gateway` package (command `tributary`): what a deployment's `tributary.config.ts` imports.
 *
 * ```ts
 * import { database, defineConfig, rest } from 'tributary-gateway'
 * export default defineConfig({
 *   datasources: [database({ namespace: 'app', url: process.env.DATABASE_URL ?? 'sqlite:./app.db' })],
 * })
 * ```
 *
 * TypeScript operations (`operations/**\/*.ts`) default-export {@link createOperation}`.query|mutation|subscription({ input, handler })`.
 *
 * `tributary-gateway/config` exports the same. Programs that embed the gateway use {@link createGateway}
 * (load the sources, compose, compile the operations) and {@link buildApp} (the fastify app).
 */
export {
  defineConfig,
  database,
  rest,
  graphql,
  federation,
  schema,
  events,
  resolveConfig,
  type TributaryConfig,
  type TributaryConfigInput,
  type DataSourceDefinition,
  type DataSourceBase,
  type DatabaseDataSource,
  type RestDataSource,
  type GraphQLDataSource,
  type FederationDataSource,
  type MergeableSource,
  type SchemaDataSource,
  type EventsDataSource,
  type RouteDefinition,
  type ServiceDefinition,
  type RunMode,
  type DatabaseSourceOptions,
  type RestSourceOptions,
  type GraphQLSourceOptions,
  type FederationSourceOptions,
  type SubgraphOptions,
  type MergedTypeOptions,
  type SchemaSourceOptions,
  type EventsSourceOptions,
  type EventTriggerInput,
  type EventTriggerOp,
  type EventDeliveryTarget,
  type EventsDeliveryInput,
} from './config/index.js'
export type { EventPayload } from './events/index.js'
export { loadConfigFile } from './config/load.js'
export { createGateway, type Gateway, type CreateGatewayOptions, type LoadedSource } from './runtime.js'
export { buildApp, type BuildAppOptions } from './http/app.js'
export { errorCodes, isTributaryError } from './errors.js'
export {
  createOperation,
  OperationError,
  type TypeScriptOperation,
  type HandlerContext,
  type OperationsClient,
  type OperationRegistry,
  type OperationEntry,
  type OperationNames,
  type OperationData,
  type TypedOperationCall,
  type TypedOperationsClient,
  type UntypedOperationsClient,
  type ClaimMap,
  type OperationCall,
  type OperationCallResult,
  type OperationUser,
  type OperationLogger,
  type OperationCacheSettings,
  type QuerySettings,
  type MutationSettings,
  type SubscriptionSettings,
  type InputSchema,
} from './operations/define.js'
export type {
  HooksConfigInput,
  OperationHooks,
  OperationHookArgs,
  OperationPostHookArgs,
  OperationResponse,
  GlobalHooks,
  AuthenticationHooks,
  AuthenticationResult,
  OriginRequest,
  OriginResponse,
  OriginRequestArgs,
  OriginResponseArgs,
  ConnectionInitArgs,
  ClientRequestInfo,
  HookUser,
} from './hooks/index.js'
