import { extname, join } from "node:path";

const ext = extname(__filename);
const file = (name: string) => join(__dirname, `${name}${ext}`);

/**
 * Handlers that ship with the service, by image name, for demos and tests. A template whose
 * imageName is one of these runs that module in the worker runtime (any tag: `runpodkit/echo:1.0`).
 */
export const BUILTIN_HANDLERS: Readonly<Record<string, string>> = {
  "runpodkit/echo": file("echo"),
  "runpodkit/sleep": file("sleep"),
  "runpodkit/fail": file("fail"),
  "runpodkit/stream": file("stream"),
  "runpodkit/misbehave": file("misbehave"),
};

/** The handler of images nobody configured. */
export const FALLBACK_IMAGE = "runpodkit/echo";
