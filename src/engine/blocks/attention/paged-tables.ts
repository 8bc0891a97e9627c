import type { BlockPlacement } from "../../cache/placement.js";
import type { ForwardBatch, ForwardContext } from "../../model/model.js";
import { stepArrayToFill } from "../../model/step-scratch.js";

type PagedTables = { meta: Int32Array; tables: Int32Array };

/**
 * A step's tables by the step's context, then by cache group and window (all that pagedTables
 * reads of a placement; each layer has a placement of its own): every layer that shares both
 * reads the same tables.
 */
const stepTables = new WeakMap<ForwardContext, Map<string, PagedTables>>();

/** pagedTables of `ctx`'s batch, built by the step's first layer of its group and window, then reused. */
export function stepPagedTables(ctx: ForwardContext, placement: BlockPlacement, group: number): PagedTables {
  let built = stepTables.get(ctx);
  if (built === undefined) {
    built = new Map();
    stepTables.set(ctx, built);
  }
  const key = `${group}/${placement.window}`;
  let tables = built.get(key);
  if (tables === undefined) {
    const meta = stepArrayToFill(ctx, Int32Array, 3 * ctx.batch.tokens.length);
    tables = pagedTables(ctx.batch, placement, group, meta);
    built.set(key, tables);
  }
  return tables;
}

/**
 * What pool.attention reads a step's tokens' positions by (see attendTokens): per token t,
 * meta[3t..3t+2] = [position, first visible position, offset of its block table in `tables`], each
 * distinct block table (a sequence's, in cache group `group`) flattened once.
 */
export function pagedTables(
  batch: ForwardBatch,
  placement: BlockPlacement,
  group: number,
  meta: Int32Array = new Int32Array(3 * batch.tokens.length),
): PagedTables {
  const offsets = new Map<readonly number[], number>();
  const flat: number[] = [];
  for (let t = 0; t < batch.tokens.length; t++) {
    const blocks = (batch.blockTables[t] as readonly (readonly number[])[])[group] as readonly number[];
    let offset = offsets.get(blocks);
    if (offset === undefined) {
      offset = flat.length;
      offsets.set(blocks, offset);
      flat.push(...blocks);
    }
    const pos = batch.positions[t] as number;
    meta[3 * t] = pos;
    meta[3 * t + 1] = placement.firstVisible(pos);
    meta[3 * t + 2] = offset;
  }
  return { meta, tables: Int32Array.from(flat) };
}
