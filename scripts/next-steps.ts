/**
 * Where `npm start` ends its account: what to read or run next. This is the one place for them.
 *
 * The list is read after the main job has exited: its own service is stopped, its key was random and
 * never printed, and its endpoint (with its logs) was destroyed. So every step names a service the
 * reader starts and keeps (`npm run serve` on a fixed port and key), never this run's address.
 */
import type { NextStep } from "./progress";

/** The key and port the steps share, so the console, logs and deploy steps reach the served service. */
export const SERVE_KEY = "dev-key";
export const SERVE_PORT = 8080;
export const SERVE_COMMAND = `RUNPODKIT_API_KEYS=${SERVE_KEY} npm run serve -- --port ${SERVE_PORT}`;

/** Files in the repository that the list points to (a test checks that they exist). */
export const DOCS_POINTED_TO = [
  "docs/_index.md",
  "docs/api-docs",
  "README.md",
  "examples/README.md",
] as const;

export function nextSteps(): NextStep[] {
  const base = `http://127.0.0.1:${SERVE_PORT}`;
  return [
    {
      label: "serve",
      text: `${SERVE_COMMAND} (a service that keeps running, its store in .data/runpodkit.sqlite; this run's service stopped with it, its stack destroyed)`,
    },
    {
      label: "deploy",
      text: `pulumi up at the repository root or in examples/, pointed at that service (runpodkit:apiKey ${SERVE_KEY}, restUrl ${base}/v1, graphqlUrl ${base}/graphql, queueUrl ${base}: Pulumi.yaml and examples/README.md show how)`,
    },
    { label: "console", text: `${base}/console/ (paste the key ${SERVE_KEY})` },
    {
      // In a checkout `runpodkit` is on no PATH (and `npx runpodkit` needs a built dist/): run the
      // sources. Without --url, `logs` finds the served service by the address written beside its store.
      label: "logs",
      text: `RUNPOD_API_KEY=${SERVE_KEY} npx tsx service/main.ts logs <endpoint id> [--job <id>] [--follow] (finds that service beside its store)`,
    },
    {
      label: "docs",
      text: "docs/_index.md (overview), docs/api-docs/ (a page per resource), README.md, examples/README.md",
    },
  ];
}
