/**
 * The database connector end to end on PostgreSQL (TEST_POSTGRES_URL, a fresh schema): see test/helpers/database-suite.ts.
 * Every query runs through graphql-js `execute` and graphql-jit `compileQuery`.
 */
import t from 'tap'
import { databaseSuite } from './helpers/database-suite.js'

databaseSuite(t, 'postgres')
