/**
 * Bench handler: streams `input.chunks` chunks of `input.chunkBytes` ASCII characters each (default
 * 40 x 256 KiB = 10 MiB), to measure streaming a large output through /stream.
 */
export async function* handler(job: { input: unknown }): AsyncGenerator<unknown> {
  const input = (job.input ?? {}) as { chunks?: number; chunkBytes?: number };
  const chunks = input.chunks ?? 40;
  const piece = "x".repeat(input.chunkBytes ?? 256 * 1024);
  for (let index = 0; index < chunks; index++) yield { index, text: piece };
}
