/** Attack: database input limits (take, skip, in lists, nesting, NUL) on mysql; see test/helpers/attack-db-input.ts. */
import { attackDatabaseInputOn } from './helpers/attack-db-input.js'

await attackDatabaseInputOn('mysql')
