/** Runs `total` calls with `concurrency` loops in flight, as a client with that many connections would. */
export async function inParallel(
  total: number,
  concurrency: number,
  call: (index: number) => Promise<void>,
): Promise<{ errors: number; firstError?: string }> {
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const loop = async () => {
    for (let i = next++; i < total; i = next++) {
      try {
        await call(i);
      } catch (error) {
        errors++;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, loop));
  return { errors, firstError };
}
