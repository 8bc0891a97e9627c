import { readFile } from "node:fs/promises";
import { z } from "zod";
import type { Endpoint } from "../client/index.js";
import { writeFileAtomic } from "../common/atomic-write.js";
import { BringupError } from "../common/errors.js";
import { type Decode, decodeRequests, decodeSequentially, type SamplingMode } from "./decodes.js";

const GOLDEN_SCHEMA = "bringup.golden-decode/1";

const GoldenFile = z.strictObject({
  schema: z.literal(GOLDEN_SCHEMA),
  model: z.string(),
  endpoint: z.string(),
  decodes: z.array(
    z.strictObject({
      request: z.record(z.string(), z.unknown()),
      tokens: z.array(z.string()),
      logprobs: z.array(z.number().nullable()),
    }),
  ),
});
export type GoldenFile = z.infer<typeof GoldenFile>;

/** Decodes the gate's requests on a trusted build and writes them as a golden file. */
export async function writeGoldenDecodes(
  endpoint: Endpoint,
  sampling: readonly SamplingMode[],
  path: string,
): Promise<GoldenFile> {
  const requests = decodeRequests(sampling);
  const decodes = await decodeSequentially(endpoint, requests);
  const golden: GoldenFile = {
    schema: GOLDEN_SCHEMA,
    model: endpoint.model,
    endpoint: endpoint.url,
    decodes: requests.map((request, i) => ({
      request: { ...request },
      tokens: [...(decodes[i] as Decode).tokens],
      logprobs: [...(decodes[i] as Decode).logprobs],
    })),
  };
  await writeFileAtomic(path, `${JSON.stringify(golden, null, 2)}\n`);
  return golden;
}

/** The golden decodes for `sampling`, in request order; refuses a file written for other requests. */
export async function readGoldenDecodes(path: string, sampling: readonly SamplingMode[]): Promise<Decode[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    throw new BringupError(
      "GOLDEN_MISSING",
      `no golden file at ${path}; write one from a trusted build with --write-golden ${path}.`,
      { subject: path, cause },
    );
  }
  let parsed: GoldenFile;
  try {
    parsed = GoldenFile.parse(JSON.parse(text));
  } catch (cause) {
    throw new BringupError(
      "GOLDEN_INVALID",
      `${path} is not a ${GOLDEN_SCHEMA} file (${(cause as Error).message.slice(0, 200)}); rewrite it with --write-golden.`,
      { subject: path, cause },
    );
  }
  const wanted = decodeRequests(sampling).map((r) => JSON.stringify(r));
  const byRequest = new Map(parsed.decodes.map((d) => [JSON.stringify(d.request), d]));
  return wanted.map((key) => {
    const found = byRequest.get(key);
    if (!found) {
      throw new BringupError(
        "GOLDEN_MISMATCHED_REQUESTS",
        `${path} holds no decode for the request ${key}; rewrite it with --write-golden for these sampling modes.`,
        { subject: path },
      );
    }
    return { tokens: found.tokens, logprobs: found.logprobs };
  });
}
