/**
 * Which variables of a template's or endpoint's `env` a worker process receives. An account writes that
 * env, but the worker runs on this machine as the service's user, so any variable that changes how
 * the worker's runtime loads code (a preload library, `--require` in NODE_OPTIONS, a module path, a
 * shell startup file) would let an account run its own code in a built-in worker, or in a command
 * worker the operator configured. Those are dropped, by name; everything else passes unchanged.
 * The operator, who writes the `--handler` command lines, can still set any of them there.
 */

/** Exact names dropped. PATH and HOME are the service's own (the worker's PATH, its work directory). */
const DROPPED_NAMES = new Set([
  "PATH",
  "HOME",
  // glibc loads iconv modules from here.
  "GCONV_PATH",
  // Python: module search path, installation, startup file, hooks, cache locations.
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONSTARTUP",
  "PYTHONUSERBASE",
  "PYTHONEXECUTABLE",
  "PYTHONPLATLIBDIR",
  "PYTHONBREAKPOINT",
  "PYTHONINSPECT",
  "PYTHONPYCACHEPREFIX",
  // Perl and Ruby: options and module paths.
  "PERL5LIB",
  "PERL5OPT",
  "PERLLIB",
  "RUBYOPT",
  "RUBYLIB",
  // Shells: startup files and options of the shell that runs a command worker.
  "BASH_ENV",
  "ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "IFS",
  "PS4",
]);

/**
 * Prefixes dropped: the dynamic loader (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...; DYLD_* on macOS),
 * exported bash functions, OpenSSL's configuration and modules (which load shared libraries), and
 * every NODE_* variable but NODE_ENV (NODE_OPTIONS, NODE_PATH, NODE_EXTRA_CA_CERTS, NODE_V8_COVERAGE,
 * NODE_REDIRECT_WARNINGS, NODE_COMPILE_CACHE, ... load code or certificates, or write files).
 */
const DROPPED_PREFIXES = ["LD_", "DYLD_", "BASH_FUNC_", "OPENSSL_", "NODE_"];

/** NODE_* variables a handler may read (they do not change the runtime). */
const KEPT_NODE = new Set(["NODE_ENV"]);

/** True when a worker never receives this variable from a template or endpoint `env`. */
export function isRuntimeVariable(name: string): boolean {
  const upper = name.toUpperCase();
  if (KEPT_NODE.has(upper)) return false;
  return DROPPED_NAMES.has(upper) || DROPPED_PREFIXES.some((prefix) => upper.startsWith(prefix));
}

/**
 * True when no process can receive this entry as it is: a name with "=" sets another variable than
 * the one named ("PYTHONPATH=/x:" arrives as PYTHONPATH), and NUL ends the string (Node refuses to
 * spawn with it, so the worker would never start). The API refuses both; stores written before it did
 * may still hold them.
 */
export function isMalformedVariable(name: string, value: string): boolean {
  return name === "" || name.includes("=") || name.includes("\0") || value.includes("\0");
}

/** A malformed name as logs show it: nothing after an "=" (it may be a value), NUL escaped. */
function malformedName(name: string): string {
  const cut = name.indexOf("=");
  const shown = cut === -1 ? name : `${name.slice(0, cut)}=…`;
  return JSON.stringify(shown).slice(1, -1) || '""';
}

/** The env a worker may receive, and the names dropped (never their values), sorted. */
export function workerEnv(env: Readonly<Record<string, string>>): {
  kept: Record<string, string>;
  dropped: string[];
} {
  const kept: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (isMalformedVariable(name, value)) dropped.push(malformedName(name));
    else if (isRuntimeVariable(name)) dropped.push(name);
    else kept[name] = value;
  }
  return { kept, dropped: dropped.sort() };
}

/**
 * What the OS takes when it starts a process (Linux; macOS allows less in all, 1 MiB of arguments and
 * env together): one `NAME=value` string under 128 KiB (MAX_ARG_STRLEN), all of them within ARG_MAX
 * (2 MiB by default; half is left to the command line and the OS's own use).
 */
export const PROCESS_ENV_LIMITS = { variableBytes: 128 * 1_024, totalBytes: 1_024 * 1_024 } as const;

/**
 * Why no process can be started with this env (spawn would fail with E2BIG, and the worker be retried
 * in vain), naming the variable but never its value; null when it fits. The API bounds each env it is
 * given (sdk/schemas/template.ts ENV_LIMITS), but a secret reference is replaced by the secret's value
 * (up to 16 MiB) only now, and a template's and an endpoint's env add up.
 */
export function envTooLarge(env: Readonly<Record<string, string>>): string | null {
  let total = 0;
  for (const [name, value] of Object.entries(env)) {
    // NAME=value and the string's terminating NUL.
    const bytes = Buffer.byteLength(name) + Buffer.byteLength(value) + 2;
    if (bytes > PROCESS_ENV_LIMITS.variableBytes) {
      return `env ${JSON.stringify(name).slice(1, -1)} is ${bytes} bytes (with its secrets substituted), more than the ${PROCESS_ENV_LIMITS.variableBytes} one variable of a process may hold`;
    }
    total += bytes;
  }
  if (total > PROCESS_ENV_LIMITS.totalBytes) {
    return `the worker's env is ${total} bytes (template and endpoint env, secrets substituted), more than the ${PROCESS_ENV_LIMITS.totalBytes} a process may be started with`;
  }
  return null;
}
