import {
  closeSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { z } from "zod";

/**
 * Where a running service can be reached, written beside its store (`<store>.address.json`, 0600) once
 * it listens and removed when it closes, so `runpodkit logs` finds a service started on a free port
 * (the default) from its --data alone. It holds the service's pid and base URLs: never a key.
 */
export const ServiceAddress = z.strictObject({
  pid: z.number().int().positive(),
  /** The job API's base without `/v2` (RunningService.queueUrl). */
  queueUrl: z.url({ protocol: /^https?$/ }).max(2_048),
  restUrl: z.url({ protocol: /^https?$/ }).max(2_048),
  graphqlUrl: z.url({ protocol: /^https?$/ }).max(2_048),
});
export type ServiceAddress = z.infer<typeof ServiceAddress>;

/** The CLI's default store (`--data`), relative to the directory it runs in. */
export function defaultDataPath(): string {
  return join(process.cwd(), ".data", "runpodkit.sqlite");
}

export function addressFileOf(data: string): string {
  return `${data}.address.json`;
}

/** The most of the file read back: a few URLs; anything larger is not ours. */
const MAX_FILE_BYTES = 16 * 1024;

/** Writes the address beside the store (whole or not at all: a reader never sees half of it). */
export function writeServiceAddress(data: string, address: ServiceAddress): void {
  const file = addressFileOf(data);
  const temporary = `${file}.${process.pid}.tmp`;
  // Created anew ("wx"): a file or symlink someone else put at this predictable name (a store in a
  // shared directory such as /tmp) is never written through.
  let fd: number;
  try {
    fd = openSync(temporary, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    // Left by a killed service that had this pid (a container restarted), or planted: removed (a
    // symlink itself, never its target) and created anew, once (a second EEXIST is someone racing).
    unlinkSync(temporary);
    fd = openSync(temporary, "wx", 0o600);
  }
  try {
    try {
      writeSync(fd, `${JSON.stringify(ServiceAddress.parse(address))}\n`);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, file);
  } catch (error) {
    // A full disk: the temporary file goes too (left, one more piled up at each start).
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** Removes the address file if this process wrote it (a later service on the store may have its own). */
export function removeServiceAddress(data: string): void {
  const file = addressFileOf(data);
  try {
    const known = ServiceAddress.safeParse(JSON.parse(readFileSync(file, "utf8")));
    if (known.success && known.data.pid === process.pid) unlinkSync(file);
  } catch {
    // Already gone, or not ours to remove.
  }
}

/** What is beside the store: the running service's address, or why there is none (for a message). */
export type AddressLookup = { address: ServiceAddress } | { missing: string };

/** Reads the address of the service running on `data`; one whose process is gone is not running. */
export function readServiceAddress(data: string): AddressLookup {
  const file = addressFileOf(data);
  let text: string;
  try {
    const fd = openSync(file, "r");
    try {
      const untrusted = untrustedBecause(fd);
      if (untrusted) return { missing: `${file} is not trusted: ${untrusted}` };
      const buffer = Buffer.alloc(MAX_FILE_BYTES + 1);
      const length = readSyncWhole(fd, buffer);
      if (length > MAX_FILE_BYTES) return { missing: `${file} is not a service address (too large)` };
      text = buffer.subarray(0, length).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      missing: code === "ENOENT" ? `no service is running on ${data} (no ${file})` : `${file}: ${code}`,
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { missing: `${file} is not a service address (not JSON)` };
  }
  const address = ServiceAddress.safeParse(parsed);
  if (!address.success) return { missing: `${file} is not a service address` };
  if (!processExists(address.data.pid)) {
    return { missing: `the service that wrote ${file} (pid ${address.data.pid}) is no longer running` };
  }
  return { address: address.data };
}

/**
 * Why an address file may have been written by someone else, or null. `runpodkit logs` sends the
 * account key to the URL it names: a file another user owns or can write (beside a store in a shared
 * directory such as /tmp) would send it to their server.
 */
function untrustedBecause(fd: number): string | null {
  const stats = fstatSync(fd);
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid) return `it belongs to another user (uid ${stats.uid})`;
  if ((stats.mode & 0o022) !== 0) return "other users can write it";
  return null;
}

/** Reads up to the buffer's size: the file is read bounded, whatever it holds. */
function readSyncWhole(fd: number, buffer: Buffer): number {
  let length = 0;
  for (;;) {
    const read = readSync(fd, buffer, length, buffer.length - length, null);
    length += read;
    if (read === 0 || length >= buffer.length) return length;
  }
}

export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
