/** Resolves when the process is asked to stop (Ctrl-C or SIGTERM), so a long-running command can clean up. */
export function untilSignalled(): Promise<void> {
  return new Promise((done) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      done();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}
