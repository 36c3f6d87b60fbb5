/**
 * A preload for A/B runs of the fast path (service/edge/fast-path.ts): the service it is given to
 * serves every request through Fastify (config.jobs.fastPath false), e.g.
 * `npx tsx bench/tools/e2e-cpu.ts --variant= --variant=--require=./bench/tools/fast-path-off.cjs`
 * (the path as the bench's service process resolves it, from the project root). Needs the bench build.
 */
require("../.tmp/build/service/jobs/config.js").DEFAULT_JOB_PLANE_CONFIG.fastPath = false;
