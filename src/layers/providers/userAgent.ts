/**
 * How the library names itself to the servers it talks to: model APIs get it as `User-Agent`,
 * MCP servers as the client's `clientInfo`.
 */
import packageJson from "../../../package.json" with { type: "json" }

/** The package name. */
export const libraryName: string = packageJson.name

/** The package version. */
export const libraryVersion: string = packageJson.version

/** `effect-agent-loop/<version>`. */
export const userAgent = `${libraryName}/${libraryVersion}`
