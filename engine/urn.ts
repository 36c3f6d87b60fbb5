/** Pulumi URNs: urn:pulumi:<stack>::<project>::<qualified type>::<name>. */
export const STACK_TYPE = "pulumi:pulumi:Stack";

export function makeUrn(
  stack: string,
  project: string,
  type: string,
  name: string,
  parentUrn: string,
): string {
  const parentType = parentUrn ? qualifiedTypeOf(parentUrn) : "";
  // Children of the stack are not prefixed with the stack's type; children of components are.
  const qualified = parentType && parentType !== STACK_TYPE ? `${parentType}$${type}` : type;
  return `urn:pulumi:${stack}::${project}::${qualified}::${name}`;
}

export function qualifiedTypeOf(urn: string): string {
  return urn.split("::")[2] ?? "";
}

export function typeOf(urn: string): string {
  return qualifiedTypeOf(urn).split("$").pop() ?? "";
}

export function nameOf(urn: string): string {
  return urn.split("::").slice(3).join("::");
}
