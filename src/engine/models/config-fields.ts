import { z } from "zod";
import { BringupError } from "../../common/errors.js";

/** Throws MODEL_CONFIG_INVALID naming the config.json field to fix. */
export type Fail = (field: string, message: string) => never;

export const positive = z.number().int().positive();
export const nonNegative = z.number().int().nonnegative();
/** `bos_token_id` / `eos_token_id`: one id or a list of ids. */
export const tokenIds = z.union([nonNegative, z.array(nonNegative)]);

/** The token-id fields every family reads the same way. */
export const TOKEN_ID_FIELDS = { bos_token_id: nonNegative.nullish(), eos_token_id: tokenIds.nullish() };

/**
 * Parses `json` (a config.json object read from `source`) with a family's `schema`: the fields it
 * reads, its defaults and their checks. The first failing field is MODEL_CONFIG_INVALID naming
 * `source`, the field and the `family` whose config.json is read; `fail` raises the same error for
 * the family's own cross-field checks.
 */
export function parseConfigFields<S extends z.ZodType>(
  schema: S,
  json: unknown,
  source: string,
  family: string,
): { readonly fields: z.infer<S>; readonly fail: Fail } {
  const fail: Fail = (field, message) => {
    throw new BringupError("MODEL_CONFIG_INVALID", `${source}: ${field}: ${message}`, { subject: source });
  };
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    fail(
      issue?.path.join(".") || "(root)",
      `${issue?.message ?? "invalid"}; fix this field (a ${family} config.json is read).`,
    );
  }
  return { fields: parsed.data as z.infer<S>, fail };
}

/** The ModelConfig token fields of parsed `bos_token_id` / `eos_token_id`. */
export function tokenIdConfig(c: {
  readonly bos_token_id?: number | null;
  readonly eos_token_id?: number | readonly number[] | null;
}): { readonly bosTokenId?: number; readonly eosTokenIds: readonly number[] } {
  const eos = c.eos_token_id;
  return {
    ...(c.bos_token_id != null ? { bosTokenId: c.bos_token_id } : {}),
    eosTokenIds: eos == null ? [] : typeof eos === "number" ? [eos] : [...eos],
  };
}
