/**
 * Loading an optional peer dependency (AWS's and Google's packages) by a name bundlers do not
 * follow: an application that bundles the library without those packages still builds, and only a
 * provider that needs one fails, at its first call, saying what to install.
 */

/** `import(name)` typed as the module `M`, hidden from bundlers' static analysis. */
export const importPeer = <M>(name: string): Promise<M> => import(/* @vite-ignore */ /* webpackIgnore: true */ name) as Promise<M>
