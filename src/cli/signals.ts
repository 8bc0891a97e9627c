import { readFileSync } from "node:fs";

/** How often a long-running command checks that its launcher is still there. */
const LAUNCHER_POLL_MS = 1000;

/** The fields of /proc/<pid>/stat after the command (state, ppid, ...): Linux only, else undefined. */
function statOf(pid: number): string[] | undefined {
  try {
    // "pid (comm) state ppid ..."; comm may hold spaces, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The parent pid of `pid`, or undefined where /proc is absent or the process is gone. */
function parentOf(pid: number): number | undefined {
  const parent = statOf(pid)?.[1];
  return parent === undefined ? undefined : Number(parent);
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/**
 * The process that launched this one for the user: npm exec / npx, which runs the bin through a
 * shell and does not pass SIGTERM on to it. Undefined when not launched by npm.
 */
export function findLauncher(): number | undefined {
  if (process.env.npm_command === undefined && process.env.npm_execpath === undefined) return undefined;
  let pid: number | undefined = process.ppid;
  for (let depth = 0; pid !== undefined && pid > 1 && depth < 2; depth++) {
    if (/\bnpm\b|\bnpx\b|npm-cli\.js|npx-cli\.js/.test(commandOf(pid))) return pid;
    pid = parentOf(pid);
  }
  return process.ppid > 1 ? process.ppid : undefined;
}

/** Whether `pid` still runs: a zombie (exited, not yet reaped by its parent) has ended. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  return statOf(pid)?.[0] !== "Z";
}

/**
 * The launcher as found when this module loaded, at the command's start: looked up later, a launcher
 * killed in the meantime has already left this process reparented and would never be noticed.
 */
const launcherAtStart = findLauncher();

/**
 * Resolves when the process is asked to stop (Ctrl-C or SIGTERM), or when the npm/npx launcher it
 * was started through ends: stopping what the user started stops this process too.
 */
export function untilSignalled(): Promise<void> {
  return new Promise((done) => {
    const launcher = launcherAtStart;
    const watch =
      launcher === undefined
        ? undefined
        : setInterval(() => {
            if (!isRunning(launcher)) stop();
          }, LAUNCHER_POLL_MS);
    watch?.unref();
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      if (watch !== undefined) clearInterval(watch);
      done();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}
