import { spawn } from "node:child_process";
import { BringupError } from "../common/errors.js";
import type { ArmKey } from "./ab.js";

/**
 * A same-pod switch from a shell command: runs `command` with BRINGUP_BENCH_ARM set to the arm
 * (a or b) and its name in BRINGUP_BENCH_ARM_NAME, waits for it to exit 0, then polls `healthUrl`
 * until it answers 200 (the restarted server is ready).
 */
export function shellSwitch(
  command: string,
  healthUrl: string,
  names: Record<ArmKey, string>,
  options: { readyTimeoutMs?: number; pollMs?: number } = {},
): (arm: ArmKey) => Promise<void> {
  return async (arm) => {
    const stderr: string[] = [];
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(command, {
        shell: true,
        stdio: ["ignore", "ignore", "pipe"],
        env: { ...process.env, BRINGUP_BENCH_ARM: arm, BRINGUP_BENCH_ARM_NAME: names[arm] },
      });
      child.stderr.on("data", (data: Buffer) => {
        stderr.push(data.toString("utf8"));
      });
      child.once("error", reject);
      child.once("exit", resolve);
    });
    if (code !== 0) {
      const tail = stderr.join("").trim().split("\n").slice(-5).join("\n");
      throw new BringupError(
        "BENCH_SWITCH_FAILED",
        `the switch command exited with ${code} for arm ${names[arm]}; run it by hand with BRINGUP_BENCH_ARM=${arm} to see why.${tail ? `\n${tail}` : ""}`,
        { subject: command },
      );
    }
    const deadline = performance.now() + (options.readyTimeoutMs ?? 600_000);
    for (;;) {
      try {
        const response = await fetch(healthUrl, { signal: AbortSignal.timeout(5_000) });
        await response.body?.cancel();
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      if (performance.now() > deadline) {
        throw new BringupError(
          "BENCH_SWITCH_NOT_READY",
          `after switching to arm ${names[arm]}, ${healthUrl} did not answer 200 in time; check that the switch command starts the server.`,
          { subject: healthUrl },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
    }
  };
}
