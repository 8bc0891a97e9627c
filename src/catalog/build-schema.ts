import { z } from "zod";

/*
 * The schemas of a build of a port (what the embedded server is started with), which the manifest
 * (manifest.ts) and the build names (builds.ts) both read.
 */

/** Values of a model's run-time switches, as its model code declares them (`bringup serve --switch`). */
export const Switches = z
  .record(z.string().regex(/^[A-Za-z0-9_.-]+$/), z.string().min(1))
  .describe("values of the model's switches, as the port's model code declares them");

/** A conversion of the tiny checkpoint that `bringup up` runs, as `bringup weights convert` does. */
export const WeightsConversion = z
  .strictObject({
    to: z.enum(["fp8", "bf16", "mxfp4", "packed"]),
    fp8_block: z
      .enum(["block32", "tile128"])
      .optional()
      .describe(
        "FP8 scale blocks from MXFP4: block32 keeps a scale per 32 values (exact), tile128 one per tile",
      ),
    layout: z
      .enum(["ocp", "halves"])
      .optional()
      .describe(
        "with `to: mxfp4`: the MXFP4 code order, `halves` for the engine's re-layout (`bringup weights convert --layout halves`)",
      ),
    ranks: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .optional()
      .describe("with `to: packed`: the tensor-parallel ranks `bringup weights pack --ranks` writes"),
  })
  .refine((c) => c.to === "packed" || c.ranks === undefined, {
    message: "ranks applies only to `to: packed`",
    path: ["ranks"],
  })
  .refine((c) => c.to === "mxfp4" || c.layout === undefined, {
    message: "layout applies only to `to: mxfp4`",
    path: ["layout"],
  })
  .refine((c) => c.to !== "packed" || c.fp8_block === undefined, {
    message: "fp8_block does not apply to `to: packed`",
    path: ["fp8_block"],
  })
  .describe(
    "on the embedded engine: the tiny checkpoint converted with `bringup weights convert`, or packed with `bringup weights pack` (`to: packed`)",
  );

/** The KV cache layouts the embedded engine can serve a model with. */
export const KV_LAYOUTS = ["window-sized", "full"] as const;
export const KvLayout = z
  .enum(KV_LAYOUTS)
  .describe(
    "window-sized: sliding-window layers keep only their window; full: every layer keeps every token",
  );

/**
 * One arm of an A/B: a build of the port, each unset field the reference section's. A build is
 * what the embedded server is started with.
 */
export const AbArm = z.strictObject({
  kv_layout: KvLayout.optional().describe("the arm's KV layout (default: the reference section's)"),
  switches: Switches.optional().describe("the arm's switches, set over the reference section's"),
  weights: WeightsConversion.optional().describe(
    "serve the tiny checkpoint converted so (default: the weights the model code writes)",
  ),
  name: z
    .string()
    .min(1)
    .optional()
    .describe(
      "what the record calls the arm, e.g. `unpacked MXFP4 experts` (default: what its build has that the other arm's lacks)",
    ),
});

export type Switches = z.infer<typeof Switches>;
export type KvLayout = z.infer<typeof KvLayout>;
export type WeightsConversion = z.infer<typeof WeightsConversion>;
export type AbArm = z.infer<typeof AbArm>;
