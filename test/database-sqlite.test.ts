/**
 * The database connector end to end on SQLite file: see test/helpers/database-suite.ts.
 * Every query runs through graphql-js `execute` and graphql-jit `compileQuery`.
 */
import t from 'tap'
import { databaseSuite } from './helpers/database-suite.js'

databaseSuite(t, 'sqlite')
