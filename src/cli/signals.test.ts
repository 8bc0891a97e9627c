import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { isRunning } from "./signals.js";

describe("isRunning", () => {
  it("counts a zombie (exited, never reaped) as ended, as a launcher that is gone", async () => {
    // The shell's background child exits; the shell then becomes `sleep 5`, which never reaps it.
    const parent = spawn("sh", ["-c", "sleep 0 & echo $!; exec sleep 5"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    try {
      const pid = Number(
        await new Promise<string>((resolve) => parent.stdout.once("data", (d) => resolve(String(d)))),
      );
      let zombie = false;
      for (let i = 0; i < 50 && !zombie; i++) {
        await new Promise((r) => setTimeout(r, 20));
        zombie = isRunning(pid) === false;
      }
      // Still a process the kernel knows (signal 0 reaches it), yet ended.
      expect(() => process.kill(pid, 0)).not.toThrow();
      expect(zombie).toBe(true);
      expect(isRunning(parent.pid as number)).toBe(true);
    } finally {
      parent.kill("SIGKILL");
    }
  });
});
