#!/usr/bin/env node
/**
 * Builds the admin console's browser files (README "Admin console") into
 * dist/gateway/http/console-assets/, which the package ships:
 * - console.js: console-ui/main.jsx with React 18 bundled by esbuild (minified, one IIFE file);
 * - console.css, graphiql.mjs, openapi.js: console-ui/ as they are;
 * - swagger-ui-bundle.js, swagger-ui.css: Swagger UI (swagger-ui-dist), the OpenAPI viewer;
 * - plugin-explorer.umd.js, plugin-explorer.css: @graphiql/plugin-explorer 3 (UMD, over the playground's GraphiQL);
 * - LICENSE-*: the licences of what is bundled.
 * All of it comes from devDependencies: a consumer of the package installs none of them.
 */
import { cpSync, mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const out = join(root, 'dist/gateway/http/console-assets')
mkdirSync(out, { recursive: true })
await build({
  entryPoints: [join(root, 'console-ui/main.jsx')],
  outfile: join(out, 'console.js'),
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'none',
  logLevel: 'warning',
})
for (const file of ['console.css', 'graphiql.mjs', 'openapi.js']) cpSync(join(root, 'console-ui', file), join(out, file))
const nm = (...p) => join(root, 'node_modules', ...p)
for (const [from, to] of [
  [nm('swagger-ui-dist/swagger-ui-bundle.js'), 'swagger-ui-bundle.js'],
  [nm('swagger-ui-dist/swagger-ui.css'), 'swagger-ui.css'],
  [nm('swagger-ui-dist/LICENSE'), 'LICENSE-swagger-ui'],
  [nm('@graphiql/plugin-explorer/dist/index.umd.js'), 'plugin-explorer.umd.js'],
  [nm('@graphiql/plugin-explorer/dist/style.css'), 'plugin-explorer.css'],
  // plugin-explorer ships no LICENSE file: it is MIT, of the graphiql monorepo, whose licence this is.
  [nm('graphiql/LICENSE'), 'LICENSE-graphiql-plugin-explorer'],
  [nm('react/LICENSE'), 'LICENSE-react'],
]) cpSync(from, join(out, to))
