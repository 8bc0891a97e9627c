import type { BlockPlacement } from "../../cache/placement.js";
import type { ForwardBatch } from "../../model/model.js";

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
): { meta: Int32Array; tables: Int32Array } {
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
