/**
 * Preloaded (`node --require`) into the PostGraphile v4 process of the `pg-peer` bench scenario only.
 * PostGraphile v4 needs graphql 15; npm installs it under node_modules/postgraphile/node_modules, but
 * some of its packages (graphile-build, graphql-parse-resolve-info, …) take graphql as a peer and
 * resolve the project's graphql 16, so one schema mixes both ("Cannot use GraphQLNonNull from another
 * module or realm"). This sends every `graphql` and `graphql/…` request of the process to graphql 15.
 */
'use strict'
const Module = require('node:module')
const path = require('node:path')
const graphql15 = path.dirname(require.resolve('graphql/package.json', { paths: [path.dirname(require.resolve('postgraphile/package.json'))] }))
const original = Module._resolveFilename
Module._resolveFilename = function (request, parent, ...rest) {
  if (request === 'graphql' || request.startsWith('graphql/')) {
    return original.call(this, graphql15 + request.slice('graphql'.length), parent, ...rest)
  }
  return original.call(this, request, parent, ...rest)
}
