/**
 * A TypeScript operation (README "TypeScript operations"): calls the stored queries TodoById (the
 * SQLite `todo` source) and Roles (the `system` REST source) in process, with no HTTP, and answers
 * one object. `GET /operations/TodoWithRoles?id=2`.
 */
import { z } from 'zod'
// In this repository the demo imports the gateway's sources, as config.ts does; a project of one's own
// writes `from 'tributary-gateway'` (README "TypeScript operations").
import { createOperation, OperationError } from '../gateway/operations/define.js'

interface TodoById {
  todo_findUniqueTodo: { id: number; title: string; completed: boolean; createdAt: string } | null
}
interface Roles {
  system_getAllRoles: { code: string; remark: string }[]
}

export default createOperation.query({
  input: z.object({ id: z.number().int().positive() }),
  response: z.object({ id: z.number(), title: z.string(), completed: z.boolean(), createdAt: z.string(), roles: z.array(z.string()) }),
  handler: async ({ input, operations }) => {
    const [todo, roles] = await Promise.all([
      operations.query<TodoById>({ operationName: 'TodoById', input: { id: input.id } }),
      operations.query<Roles>({ operationName: 'Roles' }),
    ])
    if (todo.error) throw new OperationError({ code: todo.error.code, statusCode: todo.error.statusCode < 500 ? todo.error.statusCode : 502, message: todo.error.message })
    const found = todo.data?.todo_findUniqueTodo
    if (!found) throw new OperationError({ code: 'NotFound', statusCode: 404, message: `No todo ${input.id}` })
    return { ...found, roles: (roles.data?.system_getAllRoles ?? []).map((r) => r.code) }
  },
})
