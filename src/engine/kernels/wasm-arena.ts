/**
 * One shared WebAssembly memory per process that holds the model's weights and each thread's
 * matmul scratch, so the SIMD tile (which can only address its own memory) reads weights in place
 * instead of copying every row into its instance first. It only grows: weights live as long as the
 * process, like the model they belong to.
 */

interface SharedMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}

interface MemoryApi {
  Memory: new (d: { initial: number; maximum: number; shared: boolean }) => SharedMemory;
}

/** 4 GiB, the wasm32 limit; only address space is reserved up front. */
export const ARENA_MAX_PAGES = 65536;
const PAGE = 65536;
/** Weights stop short of the limit, leaving room for the threads' scratch regions. */
const WEIGHT_CEILING = ARENA_MAX_PAGES * PAGE - (256 << 20);

export class WasmArena {
  /** From 16, not 0: FP8 kernels' `.lanes` builds read the byte before a weight's codes (masked away). */
  private top = 16;
  private readonly owned = new WeakSet<object>();

  constructor(readonly memory: SharedMemory) {}

  /** A 16-byte-aligned region of `bytes`: its byte offset in the memory, or -1 past `limit`. */
  allocate(bytes: number, limit: number = ARENA_MAX_PAGES * PAGE): number {
    const start = (this.top + 15) & ~15;
    const end = start + bytes;
    if (end > limit) return -1;
    const have = this.memory.buffer.byteLength;
    if (end > have) this.memory.grow(Math.ceil((end - have) / PAGE));
    this.top = end;
    return start;
  }

  /**
   * A new array of `length` elements of `ctor`'s kind inside the memory, or null once weights fill
   * it (the caller keeps such arrays elsewhere; the matmul then copies their rows).
   */
  array<T extends Float32Array | Uint16Array | Uint8Array>(
    ctor: { new (buffer: ArrayBufferLike, offset: number, length: number): T; BYTES_PER_ELEMENT: number },
    length: number,
  ): T | null {
    const offset = this.allocate(length * ctor.BYTES_PER_ELEMENT, WEIGHT_CEILING);
    if (offset < 0) return null;
    const out = new ctor(this.memory.buffer, offset, length);
    this.owned.add(out);
    this.owned.add(out.buffer);
    return out;
  }

  /**
   * The byte offset of an array this arena made, or of a view of one (a stacked expert's slice),
   * or -1 for any other array. Views share their array's buffer object, which only this memory
   * hands out (a grown memory hands out a new one; the old still addresses the same bytes).
   */
  offsetOf(a: object & { readonly byteOffset: number; readonly buffer?: ArrayBufferLike }): number {
    return this.owned.has(a) || (a.buffer !== undefined && this.owned.has(a.buffer)) ? a.byteOffset : -1;
  }
}

let arena: WasmArena | null | undefined;

/** The process's arena, or null where shared WebAssembly memories are unavailable. */
export function wasmArena(): WasmArena | null {
  if (arena !== undefined) return arena;
  const api = (globalThis as unknown as { WebAssembly?: MemoryApi }).WebAssembly;
  try {
    arena =
      api === undefined
        ? null
        : new WasmArena(new api.Memory({ initial: 1, maximum: ARENA_MAX_PAGES, shared: true }));
  } catch {
    arena = null;
  }
  return arena;
}
