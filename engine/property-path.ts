/**
 * Pulumi's property paths (`env.TOKEN`, `env["a.b"]`, `ports[0]`), as `ignoreChanges` takes them, and
 * the reset Pulumi's step generator applies for each (pulumi/pulumi sdk/go/common/resource
 * `properties_path.go` ParsePropertyPath and PropertyPath.Reset; `processIgnoreChanges` in
 * pkg/resource/deploy/step_generator.go): the new inputs take the old inputs' value at the path, or
 * lose theirs when the old inputs have none. A secret on the way is looked through and kept secret.
 * Wildcards (`*`, `[*]`) are not modelled: such a path is refused by name.
 */
import { EngineError } from "./errors";
import { isObject, isSecret, makeSecret, type PropertyMap, type PropertyValue } from "./values";

export type PathSegment = string | number;

/** The segments of a property path; throws naming the path when it cannot be read. */
export function parsePropertyPath(path: string): PathSegment[] {
  const segments: PathSegment[] = [];
  let i = 0;
  const refuse = (why: string): never => {
    throw new EngineError("BAD_PROPERTY_PATH", "ignoreChanges", `${JSON.stringify(path)}: ${why}`);
  };
  while (i < path.length) {
    if (path[i] === "[") {
      const close = path.indexOf("]", i);
      if (close < 0) refuse("a [ is never closed");
      const inner = path.slice(i + 1, close);
      if (/^\d+$/.test(inner)) segments.push(Number(inner));
      else if (/^"(?:[^"\\]|\\.)*"$/.test(inner)) segments.push(JSON.parse(inner) as string);
      else refuse(`[${inner}] is neither an index nor a quoted key (wildcards are not modelled)`);
      i = close + 1;
      if (path[i] === ".") i++;
      continue;
    }
    let end = i;
    while (end < path.length && path[end] !== "." && path[end] !== "[") end++;
    const name = path.slice(i, end);
    if (name === "") refuse("an empty key");
    if (name === "*") refuse("wildcards are not modelled");
    segments.push(name);
    i = path[end] === "." ? end + 1 : end;
  }
  if (segments.length === 0) refuse("an empty path");
  return segments;
}

const open = (value: PropertyValue | undefined): PropertyValue | undefined =>
  isSecret(value) ? (value.value ?? null) : value;

function child(value: PropertyValue | undefined, segment: PathSegment): PropertyValue | undefined {
  const inner = open(value);
  if (typeof segment === "number") return Array.isArray(inner) ? inner[segment] : undefined;
  return isObject(inner) ? inner[segment] : undefined;
}

function lookup(root: PropertyValue, segments: readonly PathSegment[]): PropertyValue | undefined {
  let at: PropertyValue | undefined = root;
  for (const segment of segments) at = child(at, segment);
  return at;
}

/**
 * `value` with the path's value set (`next` a value) or removed (`next` undefined); undefined when a
 * container on the way is missing. Copies what it changes; secrets on the way stay secret.
 */
function written(
  value: PropertyValue | undefined,
  segments: readonly PathSegment[],
  next: PropertyValue | undefined,
): PropertyValue | undefined {
  const [segment, ...rest] = segments;
  if (segment === undefined) return next;
  const secret = isSecret(value);
  const inner = open(value);
  let out: PropertyValue;
  if (typeof segment === "number" && Array.isArray(inner)) {
    if (segment >= inner.length && rest.length > 0) return undefined;
    const item = rest.length === 0 ? next : written(inner[segment], rest, next);
    if (item === undefined && rest.length > 0) return undefined;
    const copy = [...inner];
    if (item === undefined) copy.splice(segment, 1);
    else copy[segment] = item;
    out = copy;
  } else if (typeof segment === "string" && isObject(inner)) {
    if (rest.length > 0 && inner[segment] === undefined) return undefined;
    const item = rest.length === 0 ? next : written(inner[segment], rest, next);
    if (item === undefined && rest.length > 0) return undefined;
    const copy = { ...inner };
    if (item === undefined) delete copy[segment];
    else copy[segment] = item;
    out = copy;
  } else {
    return undefined;
  }
  return secret ? makeSecret(out) : out;
}

/**
 * Pulumi's PropertyPath.Reset of one ignoreChanges path: the new inputs with the old inputs' value at
 * the path (or without one, when the old inputs have none). Returns undefined when the old inputs have
 * a value there but the new ones lack a container on the way (Pulumi's "one or more elements of the
 * path are missing").
 */
export function resetPath(path: string, olds: PropertyMap, news: PropertyMap): PropertyMap | undefined {
  const segments = parsePropertyPath(path);
  const previous = lookup(olds, segments);
  const current = lookup(news, segments);
  if (previous === undefined && current === undefined) return news;
  const out = written(news, segments, previous);
  return isObject(out) ? (out as PropertyMap) : undefined;
}
