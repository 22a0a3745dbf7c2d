/**
 * The deployment of the `roles` bench scenario (bench/run.mjs): the demo deployment (`config.ts`) cut
 * down to its `system` REST source and the role service it wraps, with one stored operation, `Roles`
 * (`bench/roles/operations/Roles.graphql`). Generated files go to a temporary directory, never to the
 * repository's `generated/`.
 */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineConfig } from '../../gateway/config/index.js'
import demo from '../../config.js'

export default defineConfig({
  ...demo,
  datasources: demo.datasources.filter((d) => d.kind === 'rest' && d.namespace === 'system'),
  routes: [],
  operations: { dir: 'bench/roles/operations' },
  generatedDir: join(tmpdir(), `tributary-bench-roles-${process.pid}`),
})
