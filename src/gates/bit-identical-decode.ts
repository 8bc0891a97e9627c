import type { BitIdenticalDecodeGate } from "../catalog/index.js";
import type { CompletionRequest } from "../client/index.js";
import { BringupError } from "../common/errors.js";
import {
  DECODE_TOKENS,
  type Decode,
  decode,
  decodeRequests,
  decodeSequentially,
  mismatches,
} from "./decodes.js";
import type { Gate, GateOutcome } from "./gate.js";
import { readGoldenDecodes } from "./golden.js";
import { optionalReference, requireEndpoint } from "./require.js";

type Spec = typeof BitIdenticalDecodeGate._output;

/**
 * Greedy and seeded decodes compared token by token and logprob by logprob (exact equality):
 * between the endpoint and a reference build (two-builds), between requests sent one at a time and
 * all at once to one endpoint (batch-invariance; `concurrent` repeats them to that many in flight), or against a golden file written from a trusted
 * build. Samples are the mismatching positions per decode.
 */
export const bitIdenticalDecodeGate: Gate<Spec> = {
  kind: "bit-identical-decode",
  needsEndpoint: true,
  missingInput(spec, given) {
    if (spec.compare === "golden" && !given.goldenFile) {
      return new BringupError(
        "GATE_NEEDS_GOLDEN",
        "comparing against a golden file needs its path: pass --golden FILE (written from a trusted build with --write-golden FILE).",
      );
    }
    if (spec.compare === "two-builds" && !given.reference) {
      return new BringupError(
        "GATE_NEEDS_REFERENCE",
        "comparing two builds needs the other build: pass --reference URL.",
      );
    }
    return undefined;
  },
  async run(spec, context) {
    const target = requireEndpoint(context);
    const reference = optionalReference(context);
    const requests = decodeRequests(spec.sampling);
    const a = await decodeSequentially(target.endpoint, requests);
    let b: Decode[];
    if (spec.compare === "two-builds") {
      b = await decodeSequentially((reference as NonNullable<typeof reference>).endpoint, requests);
    } else if (spec.compare === "golden") {
      b = await readGoldenDecodes(context.goldenFile as string, spec.sampling);
    } else {
      // All at once: the fixed requests, repeated in order until `concurrent` are in flight.
      const crowd = Math.max(spec.concurrent ?? 0, requests.length);
      b = await Promise.all(
        Array.from({ length: crowd }, (_, i) =>
          decode(target.endpoint, requests[i % requests.length] as CompletionRequest),
        ),
      );
    }
    const samples = b.map((x, i) => mismatches(a[i % a.length] as Decode, x));
    const bad = samples.filter((s) => s > 0).length;
    const what = {
      "two-builds": "endpoint vs reference build",
      "batch-invariance": `one at a time vs ${samples.length} at once`,
      golden: "endpoint vs golden file",
    }[spec.compare];
    return {
      kind: "bit-identical-decode",
      status: bad === 0 ? "passed" : "failed",
      summary: `${samples.length - bad}/${samples.length} decodes bit-identical (${what}; ${spec.sampling.join(" + ")}, ${DECODE_TOKENS} tokens each)`,
      metric: "decode_mismatched_positions",
      label: `positions differing between decodes, ${what}`,
      unit: "count",
      value: samples.reduce((s, x) => s + x, 0),
      arms: [{ name: target.endpoint.url, samples, reference: false }],
      measured: { decodes: samples.length, differing_decodes: bad, compare: spec.compare },
    } satisfies GateOutcome;
  },
};
