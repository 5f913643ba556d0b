/**
 * The `Workspace` layer: the built-in tools confined to one directory.
 */
import { type FileSystem, Layer, type Path } from "effect"
import type { ConfigError } from "../domain/errors.ts"
import { makeWorkspace, Workspace } from "../tools/workspace.ts"

/** A workspace rooted at `root`, which must be an existing directory. */
export const layer = (root: string): Layer.Layer<Workspace, ConfigError, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(Workspace, makeWorkspace(root))
