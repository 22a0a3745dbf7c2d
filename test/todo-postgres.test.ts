/** The demo deployment with its todo database on postgres. */
import { testTodoDemoOn } from './helpers/todo-engine.js'

await testTodoDemoOn('postgres')
