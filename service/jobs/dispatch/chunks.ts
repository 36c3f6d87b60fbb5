import type { StreamChunk } from "../../../sdk/schemas/job";

/**
 * The most JSON a chunk's metrics may take: the spec's sample is eleven numbers and a string. Larger
 * metrics (a worker's own, up to its 100 MB body) made one /stream chunk of that size, and were not
 * counted against the memory budget; they are dropped, as metrics that are not an object are.
 */
export const STREAM_METRICS_MAX_BYTES = 64 * 1024;

/**
 * Splits one streamed output into chunks of at most `maxBytes` of JSON each (the spec's 1 MB rule),
 * output and metrics together: a string is cut into substrings, an array into sub-arrays; any other
 * value too large, and an array with an item too large for a chunk of its own, is sent as pieces of
 * its JSON text. Small outputs (nearly all) pass through untouched.
 */
export function splitChunk(chunk: StreamChunk, maxBytes: number): StreamChunk[] {
  let metrics = chunk.metrics;
  let metricsBytes = metrics === undefined ? 0 : jsonBytes(metrics);
  // At most half the chunk, so the output always has room.
  if (metricsBytes > Math.min(STREAM_METRICS_MAX_BYTES, Math.floor(maxBytes / 2))) {
    metrics = undefined;
    metricsBytes = 0;
  }
  const room = maxBytes - metricsBytes;
  const size = jsonBytes(chunk.output);
  if (size <= room) return [metrics === chunk.metrics ? chunk : { output: chunk.output }];
  const output = chunk.output;
  const structured =
    typeof output === "string"
      ? splitString(output, room)
      : Array.isArray(output)
        ? splitArray(output, room)
        : undefined;
  const parts: unknown[] = structured ?? splitString(JSON.stringify(output), room);
  // The chunk's metrics go with its last piece.
  const pieces: StreamChunk[] = parts.map((part, i) =>
    i === parts.length - 1 && metrics !== undefined ? { output: part, metrics } : { output: part },
  );
  if (!structured) {
    const of = {};
    for (const [index, piece] of pieces.entries()) {
      JSON_TEXT_PIECES.set(piece, { of, index, count: pieces.length });
    }
  }
  return pieces;
}

/** Where a chunk of JSON text pieces sits among its pieces: the `index`th of `count` of output `of`. */
export interface JsonTextPiece {
  /** The same object for every piece of one output. */
  of: object;
  index: number;
  count: number;
}

/**
 * The chunks splitChunk cut from one output's JSON text, so a reader that writes each output as one
 * event (the /openai route's SSE) can rejoin them. Kept beside the chunks, not in them: /stream
 * hands them out as they are.
 */
const JSON_TEXT_PIECES = new WeakMap<StreamChunk, JsonTextPiece>();

/** The chunk's place among the pieces of one output's JSON text; undefined for any other chunk. */
export const jsonTextPiece = (chunk: StreamChunk): JsonTextPiece | undefined => JSON_TEXT_PIECES.get(chunk);

/** Cuts text into pieces whose JSON encoding fits in maxBytes, never inside a surrogate pair. */
function splitString(text: string, maxBytes: number): string[] {
  const parts: string[] = [];
  let start = 0;
  let bytes = 2; // the quotes
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const pair = isHighSurrogate(code) && i + 1 < text.length;
    const cost = pair ? 4 : jsonCharBytes(code);
    if (bytes + cost > maxBytes && i > start) {
      parts.push(text.slice(start, i));
      start = i;
      bytes = 2;
    }
    bytes += cost;
    if (pair) i++;
  }
  parts.push(text.slice(start));
  return parts;
}

/** Bytes one UTF-16 unit takes in JSON text encoded as UTF-8. */
function jsonCharBytes(code: number): number {
  if (code === 0x22 || code === 0x5c) return 2;
  if (code < 0x20) return 6;
  if (code < 0x80) return 1;
  if (code < 0x800) return 2;
  if (code >= 0xd800 && code <= 0xdfff) return 6; // lone surrogate, escaped
  return 3;
}

/**
 * Cuts an array into sub-arrays whose JSON fits in maxBytes; undefined when one item does not fit
 * even alone (a sub-array of it alone was a chunk over the bound: 1.5 MB for `["<1.5 MB string>"]`).
 */
function splitArray(items: unknown[], maxBytes: number): unknown[][] | undefined {
  const parts: unknown[][] = [];
  let current: unknown[] = [];
  let bytes = 2;
  for (const item of items) {
    const itemBytes = jsonBytes(item) + 1;
    if (itemBytes + 1 > maxBytes) return undefined;
    if (current.length > 0 && bytes + itemBytes > maxBytes) {
      parts.push(current);
      current = [];
      bytes = 2;
    }
    current.push(item);
    bytes += itemBytes;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? "null");
const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
