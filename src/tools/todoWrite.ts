/**
 * `todo_write`: the model keeps a todo list for the work of a turn (Claude Code's `TodoWrite`).
 * Each call gives the whole list as it now stands; the loop publishes it as a `TodoUpdated` event
 * (the terminal draws it as a checklist, the inspector and the protocols show it), and the call
 * stays in the session's log, so the list is kept with the session.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { TodoItem } from "../domain/Event.ts"
import * as Tool from "../domain/Tool.ts"
import { CurrentTurn } from "../services/CurrentTurn.ts"

/** Items in one list, at most. */
export const MAX_TODOS = 100

/** The arguments of `todo_write`. */
export const TodoWriteParameters = Schema.Struct({
  todos: Schema.Array(TodoItem.annotate({ description: "One item: content (imperative), status, and activeForm (present continuous)" }))
    .check(Schema.isMaxLength(MAX_TODOS))
    .annotate({ description: "The whole list as it now stands: every item, in order, with its status" })
})

const counted = (todos: ReadonlyArray<TodoItem>) => {
  const count = (status: TodoItem["status"]) => todos.filter((todo) => todo.status === status).length
  return `${count("completed")} done, ${count("in_progress")} in progress, ${count("pending")} pending`
}

/** `todo_write`. */
export const todoWrite = Tool.make({
  name: "todo_write",
  description: "Writes your todo list for the current work: give the whole list each time, every item with its status " +
    "(pending, in_progress, completed). Use it for work of three steps or more; keep one item in_progress at a time, " +
    "and mark each completed as soon as it is done. The user sees the list.",
  parameters: TodoWriteParameters,
  // it changes nothing outside the conversation
  readOnly: true,
  execute: ({ todos }, context) =>
    Effect.gen(function*() {
      const turn = yield* CurrentTurn
      if (turn.updateTodos !== undefined) yield* turn.updateTodos(context.toolCallId, todos)
      return `Todo list updated (${counted(todos)}).`
    })
})
