/**
 * Symbol precision: the text of one declaration in a TypeScript or JavaScript
 * file, found with the TypeScript compiler's parser (no type checking).
 *
 * A symbol is named by a dotted path from the top of the file: `refund`,
 * `Billing.charge`, `api.refund` (a member of an object literal assigned to a
 * variable), `outer.inner` (a function declared inside a function). Found at
 * each level: functions, classes, interfaces, type aliases, enums, namespaces,
 * variables (`const refund = async () => …`), class members (methods,
 * properties, accessors, `constructor`) and object-literal members.
 *
 * The hash is SHA-256 of the declaration's text from its first token (so
 * decorators and `export` count, a leading comment does not), with CRLF read as
 * LF so a checkout's line-ending setting does not look like an edit. Several
 * declarations under one name (overloads, a getter and its setter) are hashed
 * together in source order.
 *
 * typescript is an optional peer dependency, loaded on first use: an app that
 * never premises a symbol neither installs it nor pays for loading it, and one
 * that does without it installed is told to install it.
 */
import type ts from 'typescript'
import { MissingPackageError, type PackageNeed } from '../../errors.js'
import { sha256Hex } from '../../hash.js'
import { importOptional } from '../../optional-package.js'

export const SYMBOL_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'] as const

export function supportsSymbols(file: string): boolean {
  return SYMBOL_EXTENSIONS.some((ext) => file.toLowerCase().endsWith(ext))
}

/**
 * typescript 7 is a native compiler without the JavaScript API read here, yet
 * the peer range admits it: an app on 7 can still install agent-interlock and
 * use everything but symbol premises, where it is told what they need.
 */
export const TYPESCRIPT: PackageNeed = { name: 'typescript', feature: 'symbol premises', versions: '5 or 6', install: 'typescript@5' }

let loading: Promise<typeof ts> | undefined
function loadTypescript(): Promise<typeof ts> {
  if (loading) return loading
  const load = importOptional(TYPESCRIPT, () => import('typescript'), unusableTypescript).then(compilerApi)
  // Not kept when it failed: installing typescript fixes the next premise without a restart.
  load.catch(() => {
    if (loading === load) loading = undefined
  })
  loading = load
  return load
}

/** The imported module's compiler API (CommonJS: under `default` when imported). */
function compilerApi(m: unknown): typeof ts {
  return ((m as { default?: typeof ts }).default ?? m) as typeof ts
}

/** The installed version when it has no compiler API to parse with (typescript 7 and later), else undefined. */
export function unusableTypescript(m: unknown): string | undefined {
  const t = compilerApi(m)
  return typeof t.createSourceFile === 'function' ? undefined : String(t.version)
}

/** Why symbol premises cannot be taken here (no usable typescript), or undefined when they can; a broken install still throws. */
export async function symbolsUnavailable(): Promise<MissingPackageError | undefined> {
  try {
    await loadTypescript()
    return undefined
  } catch (e) {
    if (e instanceof MissingPackageError) return e
    throw e
  }
}

/** SHA-256 hex of the symbol's text, or null when the file declares no such symbol. */
export async function symbolHash(fileName: string, text: string, symbolPath: string): Promise<string | null> {
  const t = await loadTypescript()
  const sf = t.createSourceFile(fileName, text, t.ScriptTarget.Latest, true, scriptKind(t, fileName))
  let scope: ts.Node[] = [sf]
  for (const segment of symbolPath.split('.')) {
    const found = scope.flatMap((n) => membersOf(t, n)).flatMap((m) => declaredAs(t, m, segment))
    if (found.length === 0) return null
    scope = found
  }
  const joined = scope.map((n) => n.getText(sf)).join('\n').replace(/\r\n/g, '\n')
  return sha256Hex(joined)
}

function scriptKind(t: typeof ts, fileName: string): ts.ScriptKind {
  const lower = fileName.toLowerCase()
  if (lower.endsWith('.tsx')) return t.ScriptKind.TSX
  if (lower.endsWith('.jsx')) return t.ScriptKind.JSX
  if (/\.[mc]?js$/.test(lower)) return t.ScriptKind.JS
  return t.ScriptKind.TS
}

/** The nodes one level inside `node` that may declare the next segment of a path. */
function membersOf(t: typeof ts, node: ts.Node): readonly ts.Node[] {
  if (t.isSourceFile(node) || t.isBlock(node) || t.isModuleBlock(node)) return node.statements
  if (t.isClassLike(node) || t.isInterfaceDeclaration(node) || t.isEnumDeclaration(node)) return node.members
  if (t.isObjectLiteralExpression(node)) return node.properties
  if (t.isModuleDeclaration(node)) return node.body ? (t.isModuleBlock(node.body) ? node.body.statements : [node.body]) : []
  if (t.isFunctionLike(node) && 'body' in node && node.body) {
    const body = node.body as ts.Node
    return t.isBlock(body) ? body.statements : membersOf(t, body)
  }
  if (t.isVariableStatement(node)) {
    const decls = node.declarationList.declarations
    return decls.length === 1 ? membersOf(t, decls[0]!) : []
  }
  if (t.isVariableDeclaration(node) || t.isPropertyDeclaration(node) || t.isPropertyAssignment(node)) {
    return node.initializer ? membersOf(t, node.initializer) : []
  }
  if (t.isParenthesizedExpression(node) || t.isAsExpression(node) || t.isSatisfiesExpression(node) || t.isNonNullExpression(node)) {
    return membersOf(t, node.expression)
  }
  return []
}

/** The node(s) standing for `name` if `node` declares it. */
function declaredAs(t: typeof ts, node: ts.Node, name: string): ts.Node[] {
  if (t.isVariableStatement(node)) {
    const decls = node.declarationList.declarations
    const hits = decls.filter((d) => t.isIdentifier(d.name) && d.name.text === name)
    // A lone declarator is hashed with its `export const` so those keywords count.
    return hits.length === 1 && decls.length === 1 ? [node] : hits
  }
  if (t.isConstructorDeclaration(node)) return name === 'constructor' ? [node] : []
  const declName = (node as { name?: ts.Node }).name
  if (!declName || !isDeclarationKind(t, node)) return []
  return nameText(t, declName) === name ? [node] : []
}

function isDeclarationKind(t: typeof ts, n: ts.Node): boolean {
  return (
    t.isFunctionDeclaration(n) || t.isClassDeclaration(n) || t.isInterfaceDeclaration(n) || t.isTypeAliasDeclaration(n) ||
    t.isEnumDeclaration(n) || t.isModuleDeclaration(n) || t.isMethodDeclaration(n) || t.isPropertyDeclaration(n) ||
    t.isGetAccessorDeclaration(n) || t.isSetAccessorDeclaration(n) || t.isPropertyAssignment(n) ||
    t.isShorthandPropertyAssignment(n) || t.isMethodSignature(n) || t.isPropertySignature(n) || t.isEnumMember(n) ||
    t.isVariableDeclaration(n)
  )
}

function nameText(t: typeof ts, n: ts.Node): string | undefined {
  if (t.isIdentifier(n) || t.isPrivateIdentifier(n) || t.isStringLiteral(n) || t.isNumericLiteral(n) || t.isNoSubstitutionTemplateLiteral(n)) {
    return n.text
  }
  return undefined
}
