import { parse, quote } from "shell-quote";

/**
 * A template's start command has two spellings: GraphQL's `dockerArgs`, one string written as a
 * shell would read it, and REST's `dockerStartCmd`, the argv array a container starts with. This is
 * the one place that turns one into the other, with POSIX shell quoting (the `shell-quote` library):
 * `bash -c "sleep 1 && echo hi"` is `["bash", "-c", "sleep 1 && echo hi"]`, and that array formats
 * back to a string that parses to the same array.
 *
 * parseDockerArgs is strict: the argv is what a container is started with, without a shell, so
 * nothing in the string may need one. An operator outside quotes (`&&`, `|`, `;`, `>`, ...), a
 * variable outside single quotes (`$HOME`), an unquoted glob (`*.txt`) or a comment is refused with a
 * DockerArgsError rather than dropped or mangled (the Pulumi provider's check uses it). The service
 * takes any string (GraphQL keeps it as written) and shows REST the argv of dockerStartCmdOf, which
 * wraps such a string in `/bin/sh -c`.
 */

/** Upper bound of a dockerArgs string, in characters (as a template's startScript). */
export const DOCKER_ARGS_MAX_LENGTH = 65_536;

/** The argv a start command that needs a shell is run with: the string itself becomes its last argument. */
export const SHELL_START_CMD = ["/bin/sh", "-c"] as const;

/** The dockerArgs string cannot be an argv; the message says what was found and how to quote it. */
export class DockerArgsError extends Error {
  readonly field = "dockerArgs";

  constructor(message: string) {
    super(`dockerArgs: ${message}`);
    this.name = "DockerArgsError";
  }
}

/** What the parser yields besides plain words (typed here so nothing untyped leaves this module). */
type ParseEntry = ReturnType<typeof parse>[number];

/** Variables are returned as marker objects (never expanded) so that they can be refused. */
const keepVariables = (name: string) => ({ variable: name });

/** dockerArgs -> dockerStartCmd. An empty or blank string is the empty argv. */
export function parseDockerArgs(dockerArgs: string): string[] {
  const argv: string[] = [];
  // shell-quote's typings do not admit an object-returning env function; it is documented to accept one.
  const entries = parse(dockerArgs, keepVariables as unknown as Record<string, string>) as unknown[];
  for (const entry of entries) {
    if (typeof entry === "string") argv.push(entry);
    else throw new DockerArgsError(describe(entry as ParseEntry | { variable: string }));
  }
  return argv;
}

/** The problem, as a sentence for the user. */
function describe(entry: ParseEntry | { variable: string }): string {
  const hint = "wrap the command in a shell, e.g. bash -c '...', or quote it";
  if (typeof entry === "object" && "variable" in entry)
    return `variable $${entry.variable} outside single quotes needs a shell to expand it; ${hint}`;
  if (typeof entry === "object" && "comment" in entry)
    return `a comment (#${entry.comment}) cannot be part of a command; quote the # if it is an argument`;
  if (typeof entry === "object" && "op" in entry) {
    if (entry.op === "glob") return `unquoted glob ${entry.pattern} needs a shell to expand it; ${hint}`;
    return `shell operator ${entry.op} outside quotes cannot be part of an argv; ${hint}`;
  }
  return `cannot be read as an argv; ${hint}`;
}

/**
 * The service's dockerStartCmd for a dockerArgs string: its argv when it is a plain argv, otherwise
 * `["/bin/sh", "-c", dockerArgs]` (the string whole, as a shell would run it). Never throws.
 */
export function dockerStartCmdOf(dockerArgs: string): string[] {
  try {
    return parseDockerArgs(dockerArgs);
  } catch (error) {
    if (!(error instanceof DockerArgsError)) throw error;
    return [...SHELL_START_CMD, dockerArgs];
  }
}

/** dockerStartCmd -> dockerArgs: each argument quoted so that parseDockerArgs gives the same array. */
export function formatDockerArgs(argv: readonly string[]): string {
  return argv.map(quoteArg).join(" ");
}

/**
 * One argument, quoted by shell-quote. Its output is checked against its own parser: for a few
 * characters (a lone `*` or `?`, a backtick next to a quote) the two disagree, and such an argument is
 * written in single quotes instead, where the parser reads every character literally.
 */
function quoteArg(arg: string): string {
  const quoted = quote([arg]);
  if (readsBackAs(quoted, arg)) return quoted;
  const single = `'${arg.replaceAll("'", `'\\''`)}'`;
  if (readsBackAs(single, arg)) return single;
  throw new DockerArgsError(`argument ${JSON.stringify(arg)} cannot be written as a quoted word`);
}

function readsBackAs(text: string, arg: string): boolean {
  const entries = parse(text, keepVariables as unknown as Record<string, string>);
  return entries.length === 1 && entries[0] === arg;
}
