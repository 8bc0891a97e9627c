import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERROR_CATALOGUE, type ErrorCode, exitCode, httpStatus, openaiCode } from "./error-catalogue.js";

const ROOT = new URL("../../", import.meta.url);

/** The project's TypeScript sources other than the catalogue and its test. */
function sources(): string[] {
  const listed = execFileSync("git", ["ls-files", "*.ts"], { cwd: ROOT, encoding: "utf8" });
  return listed
    .split("\n")
    .filter((path) => path !== "" && !path.startsWith("src/common/error-catalogue"))
    .map((path) => readFileSync(new URL(path, ROOT), "utf8"));
}

describe("the error catalogue", () => {
  it("declares only codes the code base uses", () => {
    const text = sources().join("\n");
    const unused = Object.keys(ERROR_CATALOGUE).filter((code) => !text.includes(`"${code}"`));
    expect(unused).toEqual([]);
  });

  it("gives usage mistakes exit code 2 and a 400, and a failed check exit code 1", () => {
    expect(exitCode("GATE_NEEDS_ENDPOINT")).toBe(2);
    expect(exitCode("BAD_ARGUMENT")).toBe(2);
    expect(httpStatus("GATE_NEEDS_ENDPOINT")).toBe(400);
    expect(exitCode("CONVERSION_NOT_EXACT")).toBe(1);
    expect(exitCode("INTERRUPTED")).toBe(130);
  });

  it("maps request errors to their HTTP status and OpenAI code", () => {
    expect([httpStatus("CONTEXT_TOO_LONG"), openaiCode("CONTEXT_TOO_LONG")]).toEqual([
      400,
      "context_length_exceeded",
    ]);
    expect([httpStatus("CLIENT_TOO_SLOW"), openaiCode("CLIENT_TOO_SLOW")]).toEqual([408, "client_too_slow"]);
    expect([httpStatus("SERVER_SHUTTING_DOWN"), httpStatus("ENDPOINT_UNREACHABLE")]).toEqual([503, 502]);
    expect(openaiCode("KV_EXHAUSTED")).toBe("kv_exhausted");
  });

  it("is checked by the type checker at every call site", () => {
    // @ts-expect-error: an undeclared code does not type-check.
    const undeclared: ErrorCode = "NOT_A_CODE";
    expect(Object.hasOwn(ERROR_CATALOGUE, undeclared)).toBe(false);
  });
});
