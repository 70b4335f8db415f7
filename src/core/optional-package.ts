/**
 * A package that only one feature uses is an optional peer dependency
 * (package.json peerDependenciesMeta), imported on the feature's first use: an
 * app that never uses the feature never installs it. Without it, the feature
 * fails with a MissingPackageError naming what to install.
 */
import { MissingPackageError, type PackageNeed } from './errors.js'

/**
 * `load()` (the `import('<name>')` itself stays at the call site), or
 * MissingPackageError when the package is not installed, or when
 * `unusable(module)` names the installed version as one the feature cannot use.
 */
export async function importOptional<T>(need: PackageNeed, load: () => Promise<T>, unusable: (module: T) => string | undefined = () => undefined): Promise<T> {
  let module: T
  try {
    module = await load()
  } catch (e) {
    if (isNotInstalled(e, need.name)) throw new MissingPackageError(need, { cause: e })
    throw e
  }
  const installed = unusable(module)
  if (installed !== undefined) throw new MissingPackageError(need, { installed })
  return module
}

/**
 * Node says "Cannot find package '<name>' imported from …" when the package
 * itself is absent; a file missing inside an installed package names that
 * file instead, and keeps its own error (a broken install, not a missing one).
 */
function isNotInstalled(e: unknown, name: string): boolean {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown }
  return code === 'ERR_MODULE_NOT_FOUND' && typeof message === 'string' && message.includes(`'${name}'`)
}
