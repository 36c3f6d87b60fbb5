/**
 * Where `npm start` ends its account: what to read or run next. This is the one place for them: the
 * local console's address (of the service that runs while the list is printed), the logs command,
 * the docs.
 */
import type { NextStep } from "./progress";

export interface ServiceAddresses {
  queueUrl: string;
}

/** Files in the repository that the list points to (a test checks that they exist). */
export const DOCS_POINTED_TO = ["docs/_index.md", "docs/api-docs", "README.md"] as const;

export function nextSteps(service: ServiceAddresses): NextStep[] {
  const base = service.queueUrl.replace(/\/+$/, "");
  return [
    {
      label: "console",
      text: `${base}/console/ (paste the account key; served by any running service: npm run serve -- --port 8080 --api-key <key>, then http://127.0.0.1:8080/console/)`,
    },
    {
      label: "logs",
      text: "runpodkit logs <endpoint id> [--worker <id>] [--job <id>] [--follow] (reads RUNPOD_API_KEY, RUNPOD_BASE_URL=http://127.0.0.1:8080/v2)",
    },
    { label: "docs", text: "docs/_index.md (overview), docs/api-docs/ (a page per resource), README.md" },
    {
      label: "again",
      text: "npm run serve, then pulumi up at the repository root (Pulumi.yaml says how) or in examples/",
    },
  ];
}
