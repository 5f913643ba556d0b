/**
 * Everything the CLI stored about sessions under a data directory, as text, whatever the store:
 * the entries of the SQLite database (`sessions.db`, read through `node:sqlite`), the JSON Lines
 * files (`sessions/`), and the raw bytes of every file there (a `-wal` journal included), so a test
 * can check that something never reached the disk.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"

const filesUnder = (dir: string): Array<string> =>
  fs.existsSync(dir)
    ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const file = path.join(dir, entry.name)
      return entry.isDirectory() ? filesUnder(file) : [file]
    })
    : []

/** The stored entries (decoded from the database) and the raw contents of every file under `data`. */
export const storedSessions = (data: string): string => {
  const database = path.join(data, "sessions.db")
  const entries: Array<string> = []
  if (fs.existsSync(database)) {
    const db = new DatabaseSync(database, { readOnly: true })
    try {
      for (const row of db.prepare("SELECT entry FROM agent_loop_entries ORDER BY session_id, seq").all()) entries.push(String(row.entry))
    } finally {
      db.close()
    }
  }
  return [...entries, ...filesUnder(data).map((file) => fs.readFileSync(file, "latin1"))].join("\n")
}
