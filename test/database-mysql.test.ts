/**
 * The database connector end to end on MySQL/MariaDB (TEST_MYSQL_URL, a fresh database): see test/helpers/database-suite.ts.
 * Every query runs through graphql-js `execute` and graphql-jit `compileQuery`.
 */
import t from 'tap'
import { databaseSuite } from './helpers/database-suite.js'

databaseSuite(t, 'mysql')
