import type { ModelSwitch } from "./model-switch.js";

/** The typed arrays a step's blocks take as scratch. */
type ScratchArray = Float32Array | Float64Array | Int32Array;

/**
 * The buffers one decode step's blocks ask for, in the order they ask: the CPU analogue of the
 * memory a captured graph owns. The first step of a batch shape records each buffer as it is asked
 * for; a later step of that shape replays them, handing request i the buffer recorded at i, zeroed
 * (what a new typed array holds) unless its caller fills it in full (stepArrayToFill), so no step
 * of that shape allocates or leaves garbage. A request
 * whose kind or length differs from the recording (a window still filling, a growing dense context)
 * replans that entry: it gets a new buffer, which the recording keeps from then on. Results never
 * depend on whether a request was replayed; only where the bytes live does.
 *
 * A buffer lives until the next step that replays this scratch: blocks take only per-step
 * temporaries from it, never what must outlive the step (cache states, weights).
 */
export class StepScratch {
  private readonly recorded: ScratchArray[] = [];
  /** Entries replanned after their first recording: kept in ordinary memory from then on. */
  private readonly unstable: boolean[] = [];
  private next = 0;
  private replayedCount = 0;
  private replannedCount = 0;

  /** Bytes of the buffers recorded now (held at most `maxBytes`). */
  private recordedBytes = 0;

  /**
   * `memory`, when given, places each entry's first recording of a Float32Array (while it has room)
   * in the kernels' shared memory, where the matmul reads its input and writes its output in place
   * instead of copying them through its scratch; an entry that replans moves to ordinary memory,
   * since that shared memory is never freed. `maxBytes` bounds what the recording holds: a buffer
   * that would take it past is handed out fresh and not recorded (steps of another shape each
   * time, e.g. prompt chunks, would otherwise keep their largest buffers alive).
   */
  constructor(
    private readonly memory?: PlanMemory,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {}

  /** Starts a step: the next request is the step's first. */
  begin(): void {
    this.next = 0;
  }

  /** Requests replayed from the recording and requests that (re)planned an entry, over all steps. */
  get counts(): { readonly replayed: number; readonly replanned: number } {
    return { replayed: this.replayedCount, replanned: this.replannedCount };
  }

  /**
   * The step's next buffer, zeroed; or, with `zeroed` false (for a caller that writes every value
   * before it reads one), a replayed buffer as the last step left it.
   */
  take<A extends ScratchArray>(kind: { new (length: number): A }, length: number, zeroed = true): A {
    const i = this.next++;
    const held = this.recorded[i];
    if (held !== undefined && held.length === length && held.constructor === kind) {
      this.replayedCount++;
      if (zeroed) held.fill(0);
      return held as A;
    }
    this.replannedCount++;
    if (held !== undefined) this.unstable[i] = true;
    const placed =
      kind === (Float32Array as unknown) && !this.unstable[i] ? this.memory?.float32(length) : undefined;
    const fresh = (placed ?? new kind(length)) as A;
    const bytes = this.recordedBytes - (held?.byteLength ?? 0) + fresh.byteLength;
    if (bytes <= this.maxBytes) {
      this.recorded[i] = fresh;
      this.recordedBytes = bytes;
    }
    return fresh;
  }
}

/** Where a plan's buffers may live beside ordinary memory (see StepScratch). */
export interface PlanMemory {
  /** A zeroed array of `length` in the kernels' shared memory, or undefined when it has no room. */
  float32(length: number): Float32Array | undefined;
}

/** What a block's forward holds that may carry a step's scratch (a ForwardContext). */
export interface ScratchHolder {
  /** The step's planned buffers when the step replays (see StepScratch); absent: allocate. */
  readonly scratch?: StepScratch;
}

/** A zeroed array of `length` for this step only: planned when the step has a scratch, else new. */
export function stepArray<A extends ScratchArray>(
  ctx: ScratchHolder,
  kind: { new (length: number): A },
  length: number,
): A {
  return ctx.scratch === undefined ? new kind(length) : ctx.scratch.take(kind, length);
}

/**
 * stepArray for a caller that writes every value before it reads one (a matmul's output, a norm's):
 * a replayed buffer is handed over as the last step left it, not zeroed first.
 */
export function stepArrayToFill<A extends ScratchArray>(
  ctx: ScratchHolder,
  kind: { new (length: number): A },
  length: number,
): A {
  return ctx.scratch === undefined ? new kind(length) : ctx.scratch.take(kind, length, false);
}

/**
 * `replay`: whether the engine plans a decode step once per batch shape and replays the plan while
 * the shape holds ("on", the default, as a serving engine captures its decode graphs unless told
 * not to), or builds every step's batch and buffers anew ("off"). The same bits either way; every
 * model has it (the loader adds it).
 */
export const REPLAY_SWITCH: ModelSwitch = {
  name: "replay",
  values: ["on", "off"],
  default: "on",
  description:
    "decode steps planned once per batch shape (their batch arrays and buffers) and replayed while the shape holds, or built anew each step",
};
