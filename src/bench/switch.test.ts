import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { shellSwitch } from "./switch.js";

describe("shellSwitch", () => {
  it("runs the command with the arm in its environment, then waits for /health", async () => {
    let healthy = false;
    const server = createServer((_request, response) => response.writeHead(healthy ? 200 : 503).end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
    try {
      const names = { a: "stock", b: "patched" };
      const toB = shellSwitch(
        'test "$BRINGUP_BENCH_ARM" = b && test "$BRINGUP_BENCH_ARM_NAME" = patched',
        url,
        names,
        {
          pollMs: 10,
        },
      );
      const ready = toB("b");
      setTimeout(() => {
        healthy = true;
      }, 50);
      await ready;
      await expect(toB("a")).rejects.toMatchObject({ code: "BENCH_SWITCH_FAILED" });
      healthy = false;
      const never = shellSwitch("true", url, names, { pollMs: 10, readyTimeoutMs: 50 });
      await expect(never("a")).rejects.toMatchObject({ code: "BENCH_SWITCH_NOT_READY" });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
