/**
 * typescript is an optional peer dependency, needed only by symbol premises:
 * without it (or with typescript 7, which has no compiler API for JavaScript)
 * they fail with an error naming what to install. The absent package is
 * simulated here by the loader; test/e2e/package-install.test.ts sees the real
 * thing in an app that installed the package without typescript.
 */
import { describe, expect, it } from 'vitest'
import { ExitCode, MissingPackageError } from '../../src/core/errors.js'
import { importOptional } from '../../src/core/optional-package.js'
import { TYPESCRIPT, unusableTypescript } from '../../src/core/targets/repo/symbols.js'

/** What Node's import() throws for a package that is not installed, and for a file missing inside one. */
function notFound(what: string): Error {
  return Object.assign(new Error(`Cannot find package '${what}' imported from /app/node_modules/agent-interlock/dist/core/targets/repo/symbols.js`), {
    code: 'ERR_MODULE_NOT_FOUND',
  })
}

describe('an optional package', () => {
  it('absent: MissingPackageError naming the feature, the versions and the npm install that fixes it; exit 3', async () => {
    const error = await importOptional(TYPESCRIPT, () => Promise.reject(notFound('typescript'))).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MissingPackageError)
    const e = error as MissingPackageError
    expect(e.message).toBe('symbol premises need typescript 5 or 6, which is not installed')
    expect(e.hint).toBe('Install it in the project that depends on agent-interlock: npm install typescript@5')
    expect(e.code).toBe('E_MISSING_PACKAGE')
    expect(e.exitCode).toBe(ExitCode.CONFIG)
    expect(e.context).toEqual({ package: 'typescript', versions: '5 or 6' })
    expect((e.cause as Error).message).toContain("'typescript'")
  })

  it('present: the module as loaded', async () => {
    const module = { version: '5.9.3' }
    await expect(importOptional(TYPESCRIPT, () => Promise.resolve(module))).resolves.toBe(module)
  })

  it('a broken install (a file missing inside the package) or another package missing keeps its own error', async () => {
    const inside = notFound('/app/node_modules/typescript/lib/typescript.js')
    await expect(importOptional(TYPESCRIPT, () => Promise.reject(inside))).rejects.toBe(inside)
    const other = notFound('typescript-plugin')
    await expect(importOptional(TYPESCRIPT, () => Promise.reject(other))).rejects.toBe(other)
    const thrown = new SyntaxError('Unexpected token')
    await expect(importOptional(TYPESCRIPT, () => Promise.reject(thrown))).rejects.toBe(thrown)
  })

  it('typescript 7 (no createSourceFile, only its version): MissingPackageError saying which one is installed', async () => {
    // typescript@7.0.2's main export is lib/version.cjs: { version, versionMajorMinor }.
    const seven = { default: { version: '7.0.2', versionMajorMinor: '7.0' } }
    const error = await importOptional(TYPESCRIPT, () => Promise.resolve(seven), unusableTypescript).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MissingPackageError)
    expect((error as MissingPackageError).message).toBe('symbol premises need typescript 5 or 6, not the 7.0.2 installed')
    expect((error as MissingPackageError).context).toEqual({ package: 'typescript', versions: '5 or 6', installed: '7.0.2' })
  })

  it('typescript 5, as imported (CommonJS under a default export): usable', async () => {
    const five = await import('typescript')
    expect(unusableTypescript(five)).toBeUndefined()
    await expect(importOptional(TYPESCRIPT, () => Promise.resolve(five), unusableTypescript)).resolves.toBe(five)
  })
})
