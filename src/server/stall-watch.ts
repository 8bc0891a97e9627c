import { readFileSync } from "node:fs";

/** One stretch in which the watched thread's timers could not run. */
export interface Stall {
  /** performance.now() when it began. */
  readonly at: number;
  readonly wallMs: number;
  /** CPU time the thread itself used meanwhile (wall time when the OS does not say). */
  readonly cpuMs: number;
}

/** The calling thread's CPU time in ms (Linux: /proc/thread-self/stat), or undefined elsewhere. */
function threadCpuMs(): number | undefined {
  try {
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    const stat = readFileSync("/proc/thread-self/stat", "latin1");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/**
 * Watches the event loop of the thread it runs on (the server's HTTP thread in a test): a timer
 * ticks every `tickMs`, and a gap between ticks longer than `thresholdMs` in which the thread
 * itself used at least `thresholdMs` of CPU is a stall. The rule: the server is stalled by work
 * it does, not by the OS giving the core to other processes (on a loaded machine a thread may
 * wait for a core for a while without having done anything), so a gap counts only for the CPU
 * time the thread spent in it (Linux; clock-tick resolution, 10 ms). Elsewhere wall time counts.
 */
export class StallWatch {
  readonly stalls: Stall[] = [];
  /** The longest gap seen, whatever its cause. */
  longestGapMs = 0;
  private readonly timer: NodeJS.Timeout;
  private last = performance.now();
  private lastCpu = threadCpuMs();

  constructor(
    readonly thresholdMs = 100,
    tickMs = 5,
  ) {
    this.timer = setInterval(() => this.tick(), tickMs);
  }

  private tick(): void {
    const now = performance.now();
    const wallMs = now - this.last;
    const cpu = threadCpuMs();
    const cpuMs = cpu !== undefined && this.lastCpu !== undefined ? cpu - this.lastCpu : wallMs;
    this.longestGapMs = Math.max(this.longestGapMs, wallMs);
    if (wallMs > this.thresholdMs && cpuMs >= this.thresholdMs)
      this.stalls.push({ at: this.last, wallMs, cpuMs });
    this.last = now;
    this.lastCpu = cpu;
  }

  stop(): void {
    clearInterval(this.timer);
    this.tick();
  }
}
