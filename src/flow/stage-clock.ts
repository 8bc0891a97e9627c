import type { StageEvent, StageName, StageTiming } from "./summary.js";

/** What a stage's work reports when it ends: its value, one line of what it did, or why it was skipped. */
export interface StageResult<T> {
  readonly value: T;
  readonly detail: string;
  readonly skipped?: boolean;
  /** The stage could not do its work, but the run goes on (the detail says why). */
  readonly failed?: boolean;
}

/** Runs stages one after another, announcing each start and end and keeping how long each took. */
export class StageClock {
  readonly timings: StageTiming[] = [];

  constructor(private readonly onStage?: (event: StageEvent) => void) {}

  async run<T>(stage: StageName, work: () => Promise<StageResult<T>>): Promise<T> {
    const started = performance.now();
    this.onStage?.({ stage, status: "started" });
    let result: StageResult<T>;
    try {
      result = await work();
    } catch (error) {
      this.end(stage, "failed", (error as Error).message, started);
      throw error;
    }
    this.end(stage, result.failed ? "failed" : result.skipped ? "skipped" : "done", result.detail, started);
    return result.value;
  }

  /** A stage that does not run at all (the run was stopped, or the options leave it out). */
  skip(stage: StageName, detail: string): void {
    this.onStage?.({ stage, status: "started" });
    this.end(stage, "skipped", detail, performance.now());
  }

  private end(stage: StageName, status: StageTiming["status"], detail: string, started: number): void {
    const elapsedMs = performance.now() - started;
    this.timings.push({ stage, status, detail, seconds: elapsedMs / 1000 });
    this.onStage?.({ stage, status, detail, elapsedMs });
  }
}
