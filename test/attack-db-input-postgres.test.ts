/** Attack: database input limits (take, skip, in lists, nesting, NUL) on postgres; see test/helpers/attack-db-input.ts. */
import { attackDatabaseInputOn } from './helpers/attack-db-input.js'

await attackDatabaseInputOn('postgres')
