/**
 * Runs an `@effect/cli` command the way the `sessionflow` commands report
 * mistakes: one line, with a short hint where the usage is, and "did you
 * mean" for a mistyped command or option.
 *
 * `@effect/cli` parses and validates the command line and renders `--help`;
 * its own error output (a help document on stderr) is replaced by a
 * {@link UsageError} whose message is one line.
 *
 * @since 0.1.0
 */
import * as AutoCorrect from "@effect/cli/AutoCorrect"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as CommandDescriptor from "@effect/cli/CommandDescriptor"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/**
 * A command-line mistake (unknown option or command, missing argument).
 * `command` is the command it was made in (`"sessions list"`), for the hint
 * that points at its `--help`.
 *
 * @since 0.1.0
 * @category errors
 */
export class UsageError extends Data.TaggedError("UsageError")<{
  readonly message: string
  readonly command?: string | undefined
}> {}

/**
 * The names of a command's subcommands, each with its own: what "did you
 * mean" chooses from.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tree {
  readonly [command: string]: Tree
}

/**
 * A declared command, as far as its names go.
 *
 * @since 0.1.0
 * @category models
 */
export interface Named {
  readonly descriptor: CommandDescriptor.Command<unknown>
}

/**
 * A command's name.
 *
 * @since 0.1.0
 * @category accessors
 */
export const nameOf = (command: Named): string => Array.from(CommandDescriptor.getNames(command.descriptor))[0] ?? ""

/**
 * The tree of commands without subcommands: their names. Groups are added
 * by name: `{ ...leaves(state), [nameOf(sessions)]: leaves(list, show) }`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const leaves = (...commands: ReadonlyArray<Named>): Tree =>
  Object.fromEntries(commands.map((command) => [nameOf(command), {}]))

/**
 * What {@link run} needs besides the command.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** the program's name in help and hints (`sessionflow`, `npm start --`) */
  readonly name: string
  readonly version: string
  /** the declared subcommands, for "did you mean" */
  readonly tree: Tree
  /** the options that take a value (`--db`), for "needs a value" */
  readonly valueOptions: ReadonlyArray<string>
  /** the options that take none (`--json`) */
  readonly flags: ReadonlyArray<string>
  /** a hint for an unknown top-level word that is not near a command's name */
  readonly unknownCommand?: ((word: string) => string | undefined) | undefined
}

/**
 * The closest of `candidates` to a mistyped `word`: at most two edits away,
 * or the only one it begins.
 *
 * @since 0.1.0
 * @category suggestions
 */
export const suggest = (word: string, candidates: Iterable<string>): Option.Option<string> => {
  const all = Array.from(candidates)
  const scored = all
    .map((candidate) => ({
      candidate,
      distance: AutoCorrect.levensteinDistance(word, candidate, CliConfig.defaultConfig)
    }))
    .filter(({ distance }) => distance <= 2)
    .sort((a, b) => a.distance - b.distance)
  if (scored.length > 0) return Option.some(scored[0]!.candidate)
  const prefixed = word.length >= 2 ? all.filter((candidate) => candidate.startsWith(word)) : []
  return prefixed.length === 1 ? Option.some(prefixed[0]!) : Option.none()
}

const list = (names: ReadonlyArray<string>) =>
  names.length <= 1 ? names.join("") : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`

/**
 * The commands of `argv` that name declared subcommands (`["sessions",
 * "list"]`), and the first word after them that names none.
 */
const walk = (tree: Tree, argv: ReadonlyArray<string>) => {
  const path: Array<string> = []
  let node = tree
  for (const arg of argv) {
    if (arg === "--") break
    if (arg.startsWith("-")) continue
    const next = node[arg]
    if (next === undefined) return { path, node, unknown: Object.keys(node).length > 0 ? arg : undefined }
    path.push(arg)
    node = next
  }
  return { path, node, unknown: undefined }
}

/**
 * The mistake a subcommand-group reports when no subcommand follows it
 * (`sessions` alone): which of its subcommands?
 *
 * @since 0.1.0
 * @category errors
 */
export const whichCommand = (tree: Tree, path: ReadonlyArray<string>): UsageError => {
  const node = path.reduce((at, name) => at[name] ?? {}, tree)
  const command = path.join(" ")
  return new UsageError({
    message: `${command === "" ? "which command?" : `${command}: which command?`} (${list(Object.keys(node))})`,
    command
  })
}

const plainText = (doc: HelpDoc.HelpDoc) => stripAnsi(HelpDoc.toAnsiText(doc)).replace(/\s*\n\s*/g, " ").trim()

/**
 * The one-line `UsageError` for what `@effect/cli` rejected in `argv`.
 *
 * @since 0.1.0
 * @category errors
 */
export const fromValidationError = (
  error: ValidationError.ValidationError,
  argv: ReadonlyArray<string>,
  options: Options
): UsageError => {
  const { path, node, unknown } = walk(options.tree, argv)
  const command = path.join(" ")
  const text = plainText(error.error)
  if (ValidationError.isCommandMismatch(error) && unknown !== undefined) {
    const what = command === "" ? "command" : `${command} command`
    const near = suggest(unknown, Object.keys(node))
    const extra = command === "" && Option.isNone(near) ? options.unknownCommand?.(unknown) : undefined
    const hint = Option.match(near, {
      onSome: (name) => `did you mean '${[...path, name].join(" ")}'?`,
      onNone: () => extra ?? `use ${list(Object.keys(node))}`
    })
    return new UsageError({ message: `unknown ${what} '${unknown}' (${hint})`, command })
  }
  const known = [...options.valueOptions, ...options.flags]
  // an option no command has, before any command (`sessionflow --verbose`)
  const stray = ValidationError.isCommandMismatch(error)
    ? argv.find((arg) => arg.startsWith("-") && arg !== "--" && !known.includes(arg.split("=")[0]!))
    : undefined
  const leftover = stray ?? /^Received unknown argument: '(.*)'$/.exec(text)?.[1]
  if (leftover !== undefined) {
    if (options.valueOptions.includes(leftover) && argv[argv.length - 1] === leftover) {
      return new UsageError({ message: `${leftover} needs a value`, command })
    }
    const times = argv.filter((arg) => arg === leftover || arg.startsWith(`${leftover}=`)).length
    if (known.includes(leftover) && times > 1) return new UsageError({ message: `${leftover} is given twice`, command })
    if (known.includes(leftover)) {
      return new UsageError({ message: `${command === "" ? "" : `${command}: `}no option ${leftover} here`, command })
    }
    if (leftover.startsWith("-")) {
      const near = suggest(leftover, known)
      return new UsageError({
        message: `unknown option '${leftover}'${
          Option.match(near, { onNone: () => "", onSome: (o) => ` (did you mean ${o}?)` })
        }`,
        command
      })
    }
    return new UsageError({ message: `unexpected argument '${leftover}'`, command })
  }
  const said = text === "" ? "invalid command line" : `${text.slice(0, 1).toLowerCase()}${text.slice(1)}`
  return new UsageError({ message: command === "" || said.startsWith("-") ? said : `${command}: ${said}`, command })
}

/**
 * The hint after a usage mistake: `(see: sessionflow sessions list --help)`.
 *
 * @since 0.1.0
 * @category errors
 */
export const hint = (name: string, error: UsageError): string =>
  `(see: ${[name, error.command ?? ""].filter((s) => s !== "").join(" ")} --help)`

const ansi = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g")

/**
 * `text` without ANSI colour codes.
 *
 * @since 0.1.0
 * @category formatting
 */
export const stripAnsi = (text: string): string => text.replace(ansi, "")

/**
 * What `help` asks for: the help of the whole program.
 *
 * @since 0.1.0
 * @category errors
 */
export class HelpRequest extends Data.TaggedError("HelpRequest")<{}> {}

/**
 * `help`: prints the program's help (as `--help` does).
 *
 * @since 0.1.0
 * @category commands
 */
export const helpCommand = Command.make("help", {}, () => Effect.fail(new HelpRequest())).pipe(
  Command.withDescription("this help")
)

/** The current console, but with `error` silent: `@effect/cli` prints its help documents there. */
const withoutErrors = (console: Console.Console): Console.Console => ({
  ...console,
  error: () => Effect.void,
  unsafe: { ...console.unsafe, error: () => {} }
})

const environment = Layer.merge(NodeContext.layer, CliConfig.layer({ showBuiltIns: false }))

/**
 * Runs `command` on `argv` (without `node` and the script): `--help` and `-h`
 * print its help; a mistake fails with a one-line {@link UsageError}; the
 * handlers print with the current `Console`.
 *
 * @since 0.1.0
 * @category running
 */
export const run = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>, options: Options) =>
(
  argv: ReadonlyArray<string>
): Effect.Effect<
  void,
  Exclude<E, ValidationError.ValidationError | HelpRequest> | UsageError,
  Exclude<R, NodeContext.NodeContext>
> =>
  Console.consoleWith((console) => {
    const app = Command.run(Command.transformHandler(command, (effect) => Effect.withConsole(effect, console)), {
      name: options.name,
      version: options.version
    })
    const program = (args: ReadonlyArray<string>) => app([options.name, options.name, ...args])
    return program(argv).pipe(
      Effect.catchIf((error) => error instanceof HelpRequest, () => program(["--help"])),
      Effect.withConsole(withoutErrors(console)),
      Effect.catchIf(ValidationError.isValidationError, (error) =>
        Effect.fail(fromValidationError(error, argv, options))),
      Effect.provide(environment)
    ) as Effect.Effect<
      void,
      Exclude<E, ValidationError.ValidationError | HelpRequest> | UsageError,
      Exclude<R, NodeContext.NodeContext>
    >
  })
