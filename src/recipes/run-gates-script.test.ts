import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { copyImageRoot, FIXTURES_DIR, fixtureManifest, runSh } from "./fixtures/index.js";
import { generateRecipe } from "./generate.js";

const STAND_INS = join(FIXTURES_DIR, "stand-ins");
let work: string;
let root: string;
let runGates: string;

/** A port the OS just handed out, free for the stand-in server to take. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

async function exists(path: string): Promise<boolean> {
  return readFile(path).then(
    () => true,
    () => false,
  );
}

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), "bringup-gates-"));
  const files = generateRecipe(await fixtureManifest("complete-lazy"));
  for (const file of files) await writeFile(join(work, file.path.split("/").pop() ?? ""), file.content);
  runGates = join(work, "run_gates.sh");
  root = await copyImageRoot(join(work, "root"));
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function run(extra: Record<string, string>) {
  const port = await freePort();
  const result = await runSh(
    runGates,
    {
      MODEL: "/weights/fixture",
      PORT: String(port),
      PYTHON: join(STAND_INS, "python"),
      BRINGUP: join(STAND_INS, "bringup"),
      IMAGE_ROOT: root,
      STAND_IN_LOG: work,
      ...extra,
    },
    work,
  );
  return { ...result, port };
}

describe("generated run_gates.sh", () => {
  for (const gateStatus of [0, 3]) {
    it(`serves with the port's flags, runs the gates, stops the server and exits ${gateStatus} with them`, async () => {
      expect((await runSh(join(work, "install.sh"), { IMAGE_ROOT: root }, work)).code).toBe(0);
      const { code, port, stderr } = await run({ STAND_IN_GATE_STATUS: String(gateStatus) });
      expect(stderr).toBe("");
      expect(code).toBe(gateStatus);
      const server = JSON.parse(await readFile(join(work, "server.json"), "utf8")) as {
        args: string[];
        env: Record<string, string>;
      };
      expect(server.args.join(" ")).toBe(
        `--model /weights/fixture --served-model-name fixture-lazy --host 127.0.0.1 --port ${port} --tensor-parallel-size 8 --max-model-len 262144`,
      );
      expect(server.env).toEqual({
        PT_HPU_LAZY_MODE: "1",
        PT_HPU_ENABLE_LAZY_COLLECTIVES: "true",
        VLLM_SKIP_WARMUP: "true",
      });
      expect((await readFile(join(work, "gate-args"), "utf8")).split("\n")).toEqual([
        "gate",
        "fixture-lazy",
        "--endpoint",
        `http://127.0.0.1:${port}`,
        "",
      ]);
      expect(await exists(join(work, "gate-saw-server"))).toBe(true);
      expect(await readFile(join(work, "server-stopped"), "utf8")).toBe("SIGTERM");
    });
  }

  it("refuses to serve in an image install.sh has not verified", async () => {
    const { code, stderr } = await run({});
    expect(code).toBe(2);
    expect(stderr).toContain("/etc/bringup/ports/fixture-lazy.pins is missing or differs from the pins");
    expect(await exists(join(work, "server.json"))).toBe(false);
  });

  it("gives up when /health does not answer in time, stopping the server without running the gates", async () => {
    expect((await runSh(join(work, "install.sh"), { IMAGE_ROOT: root }, work)).code).toBe(0);
    const { code, stderr } = await run({ STAND_IN_UNHEALTHY: "1", HEALTH_TIMEOUT: "0" });
    expect(code).toBe(1);
    expect(stderr).toContain("/health did not answer within 0 s");
    expect(await exists(join(work, "gate-args"))).toBe(false);
    expect(await exists(join(work, "server.json"))).toBe(true);
    expect(await readFile(join(work, "server-stopped"), "utf8")).toBe("SIGTERM");
  });

  it("requires MODEL", async () => {
    const { code, stderr } = await run({ MODEL: "" });
    expect(code).not.toBe(0);
    expect(stderr).toContain("set MODEL to the weights directory or model id to serve");
  });
});
