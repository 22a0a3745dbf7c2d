/**
 * Progressive override (Federation 2.7 `@override(from: "old", label: "...")`, README "Apollo
 * Federation subgraphs" → "Progressive override"), glue around `@graphql-tools/federation`:
 *
 * - composition keeps the field resolvable in both subgraphs (`@join__field(overrideLabel:)` on both);
 * - the library gives each of the two subgraphs' copies of the field an `override(context, info)`
 *   test: for `percent(n)` it compares a random number in [0, 1) with n / 100 (the new subgraph when
 *   below, the old one otherwise); for any other label it calls `handleProgressiveOverride`;
 * - this module makes the draw **one per request**: the number is drawn once per request context and
 *   reused by every field and both subgraphs' tests, so one request never resolves a field from both
 *   subgraphs or from neither, and all `percent` fields of a request move together (a request with
 *   draw 0.3 takes every field labelled `percent(n)` with n > 30 from its new subgraph). A subscription
 *   keeps its context for its life, so all its events take the same side;
 * - other labels call the source's `overrideLabels(label, context)` (true: the new subgraph); without it
 *   they stay on the old subgraph, as Apollo Router does for a label it was not told about.
 *
 * The environment variable `PROGRESSIVE_OVERRIDE_RNG` (a number in [0, 1)), read by the library,
 * replaces the draw for every request (for tests and drills).
 */
import type { GraphQLResolveInfo } from 'graphql'

/**
 * Decides a progressive-override label that is not of the form `percent(n)`.
 * @param label the `label` argument of `@override`
 * @param context the request context: `headers` (the client's request headers, lower-case names) and
 *   `auth` (`{ claims }` of a verified JWT, or null)
 * @returns true to resolve the field from the overriding (new) subgraph, false for the old one
 */
export type OverrideLabelResolver = (label: string, context: Record<string, unknown>) => boolean

/**
 * The part of a subschema config (`@graphql-tools/federation`'s `FederationSubschemaConfig`) that
 * {@link ProgressiveOverride.wrap} reads and rewrites: each merged field's `override` test. Declared
 * here, not imported: the library's type declarations import `@apollo/server-gateway-interface`, a
 * package this one does not depend on, which the published `.d.ts` would then need.
 */
export interface OverridableSubschemaConfig {
  merge?: Record<string, { fields?: Record<string, { override?: (context: unknown, info: GraphQLResolveInfo) => boolean }> }>
}

/** The options `getStitchedSchemaFromSupergraphSdl` takes for progressive override, and the wrapping of each subschema config. */
export interface ProgressiveOverride {
  handleProgressiveOverride: (label: string, context: unknown, info: GraphQLResolveInfo) => boolean
  getRng: () => number
  /** Makes the `percent(n)` tests of `config` use the request's draw; call from `onSubschemaConfig`. */
  wrap(config: OverridableSubschemaConfig): void
}

/**
 * The progressive-override glue of one federation source.
 * @param resolve the source's `overrideLabels`; a throw counts as false (the old subgraph)
 */
export function progressiveOverride(resolve: OverrideLabelResolver | undefined): ProgressiveOverride {
  const draws = new WeakMap<object, number>()
  let current: number | undefined
  const drawOf = (context: unknown): number | undefined => {
    if (typeof context !== 'object' || context === null) return undefined
    let d = draws.get(context)
    if (d === undefined) draws.set(context, (d = Math.random()))
    return d
  }
  return {
    handleProgressiveOverride: (label, context) => {
      if (!resolve) return false
      try {
        return resolve(label, (context ?? {}) as Record<string, unknown>) === true
      } catch {
        return false
      }
    },
    getRng: () => current ?? Math.random(),
    wrap(config) {
      for (const typeConfig of Object.values(config.merge ?? {})) {
        for (const fieldConfig of Object.values(typeConfig.fields ?? {})) {
          const test = fieldConfig.override
          if (!test) continue
          // The library's test calls getRng synchronously: `current` is this request's draw during the call.
          fieldConfig.override = (context, info) => {
            current = drawOf(context)
            try {
              return test(context, info)
            } finally {
              current = undefined
            }
          }
        }
      }
    },
  }
}
