/**
 * Where `npm start` ends its account: what to read or run next. This is the one place for them: the
 * local console's address joins the list (from `service`, which runs while the list is printed) once
 * the service serves a console.
 */
import type { NextStep } from "./progress";

export interface ServiceAddresses {
  queueUrl: string;
}

/** Files in the repository that the list points to (a test checks that they exist). */
export const DOCS_POINTED_TO = ["docs/_index.md", "docs/api-docs", "README.md"] as const;

export function nextSteps(_service: ServiceAddresses): NextStep[] {
  return [
    { label: "docs", text: "docs/_index.md (overview), docs/api-docs/ (a page per resource), README.md" },
    { label: "logs", text: "runpodkit logs <endpoint id> [--worker <id>] [--job <id>] [--follow]" },
    {
      label: "again",
      text: "npm run serve, then pulumi up at the repository root (Pulumi.yaml says how) or in examples/",
    },
  ];
}
