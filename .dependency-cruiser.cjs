/**
 * The floors of gateway/ (docs/architecture.md §7 "A clean tree of floors"), checked by
 * dependency-cruiser in `npm test` (`npm run lint:floors`, before tap):
 *
 * - no circle between modules, type-only imports included (`tsPreCompilationDeps`);
 * - a module imports only from its own floor or a lower one, never from a higher one.
 *
 * FLOORS is the rule, lowest first; each entry is a list of paths under gateway/ (a folder ends
 * with `/`). A new module outside every floor fails the check too, so that it gets a floor.
 */
const FLOORS = [
  ['errors.ts', 'cache-file.ts', 'deep-freeze.ts', 'compile-cache.ts', 'tick-shape.ts', 'optional-package.ts', 'safe-keys.ts', 'scalars.ts', 'result-budget.ts', 'json-depth.ts', 'service-guard.ts', 'undici.ts', 'client/'],
  ['cluster/', 'observability/'],
  ['auth/', 'hooks/'],
  ['connectors/'],
  ['compose/'],
  ['config/'],
  ['operations/'],
  ['events/'],
  ['runtime.ts', 'database-check.ts', 'services.ts'],
  ['codegen/'],
  ['http/'],
  ['scaffold.ts'],
  ['cli.ts', 'commands.ts', 'index.ts']
]

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** A path regex matching the modules of the given floors. */
const pathOf = (floors) => `^gateway/(${floors.flat().map((p) => (p.endsWith('/') ? escape(p) : `${escape(p)}$`)).join('|')})`
const name = (floor) => floor.map((p) => p.replace(/\/$/, '').replace(/\.ts$/, '')).join('+')

const upward = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `upward-from-${name(floor)}`,
  severity: 'error',
  comment: `gateway/{${floor.join(',')}} (floor ${i}) imports from a higher floor (${FLOORS.slice(i + 1).map(name).join(' > ')}): move the imported name down to the floor that owns it (docs/architecture.md §7)`,
  from: { path: pathOf([floor]) },
  to: { path: pathOf(FLOORS.slice(i + 1)) }
}))

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import circle (type-only imports included): move the shared name to the lower module (docs/architecture.md §7)',
      from: {},
      to: { circular: true }
    },
    ...upward,
    {
      name: 'floor-unknown',
      severity: 'error',
      comment: 'a module of gateway/ on no floor: add it to FLOORS in .dependency-cruiser.cjs and to docs/architecture.md §7',
      from: { path: '^gateway/', pathNot: pathOf(FLOORS) },
      to: {}
    }
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^gateway/',
    cache: false
  }
}
