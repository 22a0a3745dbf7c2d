/** The demo deployment with its todo database on mysql. */
import { testTodoDemoOn } from './helpers/todo-engine.js'

await testTodoDemoOn('mysql')
