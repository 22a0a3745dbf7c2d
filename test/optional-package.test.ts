/**
 * gateway/optional-package.ts: an optional peer dependency that is not installed fails with one
 * TRB_ERR_PACKAGE_MISSING line naming the package to install; an installed one loads. (The real
 * thing, a consumer's install without pg or mysql2, is in test/adoption-package.test.ts.)
 */
import t from 'tap'
import { importOptional, requireOptional } from '../gateway/optional-package.js'

t.test('a missing package: the coded message names what needs it and what to install', async (t) => {
  t.throws(() => requireOptional('tributary-no-such-driver', "PostgreSQL source 'shop'"), {
    code: 'TRB_ERR_PACKAGE_MISSING',
    message: "PostgreSQL source 'shop' needs the tributary-no-such-driver package: npm install tributary-no-such-driver",
  })
  await t.rejects(importOptional('tributary-no-such-sdk', 'telemetry.otlpEndpoint', 'tributary-no-such-sdk its-exporter'), {
    code: 'TRB_ERR_PACKAGE_MISSING',
    message: 'telemetry.otlpEndpoint needs the tributary-no-such-sdk package: npm install tributary-no-such-sdk its-exporter',
  })
})

t.test('an installed package loads, by require and by import', async (t) => {
  t.equal(typeof requireOptional<{ types: { getTypeParser: unknown } }>('pg', 'PostgreSQL').types.getTypeParser, 'function')
  const { Redis } = await importOptional<{ Redis: unknown }>('ioredis', 'pubsub.redisUrl')
  t.equal(typeof Redis, 'function')
})
