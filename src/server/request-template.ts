import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ErrorCode } from "../common/error-catalogue.js";
import { BringupError } from "../common/errors.js";
import type { ChatTemplateContext } from "../engine/index.js";
import { ApiError } from "./api-error.js";

/** What one request's chat template may spend rendering. */
export interface TemplateBudget {
  /** Wall-clock time for one render, from when its process starts it. */
  readonly milliseconds: number;
  /** The rendering process's JavaScript heap (V8's old generation), in MiB. */
  readonly heapMiB: number;
}

export const DEFAULT_TEMPLATE_BUDGET: TemplateBudget = { milliseconds: 2000, heapMiB: 64 };

export interface ToTemplateProcess {
  readonly template: string;
  readonly context: ChatTemplateContext;
  /** A longer result is refused there, so it never crosses to the HTTP thread. */
  readonly maxChars: number;
}

export type FromTemplateProcess =
  | { readonly type: "ready" }
  | { readonly type: "rendered"; readonly text: string }
  | { readonly type: "too-long"; readonly chars: number }
  | { readonly type: "failed"; readonly code: ErrorCode; readonly message: string };

interface Job extends ToTemplateProcess {
  readonly resolve: (text: string) => void;
  readonly reject: (error: unknown) => void;
}

function overBudget(what: string): ApiError {
  return new ApiError(
    400,
    `the request's chat_template ${what}; simplify it or leave it out to use the model's.`,
    "chat_template_budget",
    "chat_template",
  );
}

function closedError(): BringupError {
  return new BringupError("ENGINE_CLOSED", "the server is shutting down; retry against a running server.");
}

/** Run from TypeScript sources (tests, tsx), the process needs tsx's loader too (a dev dependency). */
const FROM_SOURCE = import.meta.url.endsWith(".ts");
const PROCESS_PATH = fileURLToPath(
  new URL(FROM_SOURCE ? "./request-template-process.ts" : "./request-template-process.js", import.meta.url),
);

/**
 * Renders requests' own chat templates in a process of its own, one at a time, each under a
 * budget of time and heap: a template past it is refused with a 400 naming the budget and the
 * process is replaced, so no template can hold or kill the server.
 */
export class RequestTemplateRenderer {
  private readonly queue: Job[] = [];
  private child: ChildProcess | undefined;
  private ready = false;
  private current: Job | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The child's stderr tail: V8 reports running out of heap there. */
  private stderr = "";

  constructor(readonly budget: TemplateBudget = DEFAULT_TEMPLATE_BUDGET) {}

  /** The template's text for `context`, or a 400 (invalid, failed, too long, past the budget). */
  render(template: string, context: ChatTemplateContext, maxChars: number): Promise<string> {
    if (this.closed) return Promise.reject(closedError());
    return new Promise((resolve, reject) => {
      this.queue.push({ template, context, maxChars, resolve, reject });
      this.next();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(closedError());
    this.finish()?.reject(closedError());
    const child = this.child;
    this.child = undefined;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGKILL");
      await exited;
    }
  }

  private next(): void {
    if (this.current !== undefined || this.closed) return;
    if (this.child === undefined) {
      if (this.queue.length > 0) this.spawn();
      return;
    }
    if (!this.ready) return;
    const job = this.queue.shift();
    if (job === undefined) return;
    this.current = job;
    this.stderr = "";
    const { template, context, maxChars } = job;
    this.child.send({ template, context, maxChars } satisfies ToTemplateProcess);
    this.timer = setTimeout(
      () =>
        this.fail(overBudget(`did not finish rendering within its budget of ${this.budget.milliseconds} ms`)),
      this.budget.milliseconds,
    );
  }

  private spawn(): void {
    const child = fork(PROCESS_PATH, [], {
      execArgv: [...(FROM_SOURCE ? ["--import", "tsx"] : []), `--max-old-space-size=${this.budget.heapMiB}`],
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      serialization: "json",
    });
    this.child = child;
    this.ready = false;
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4096);
    });
    child.on("message", (m: FromTemplateProcess) => {
      if (m.type === "ready") {
        this.ready = true;
        this.next();
        return;
      }
      const job = this.finish();
      if (job === undefined) return;
      if (m.type === "rendered") job.resolve(m.text);
      else if (m.type === "too-long")
        job.reject(overBudget(`rendered ${m.chars} characters, more than the ${job.maxChars} allowed here`));
      else job.reject(new BringupError(m.code, m.message, { subject: "chat_template" }));
      this.next();
    });
    child.on("error", (error) => {
      if (this.child === child) this.fail(error);
    });
    child.on("exit", () => {
      if (this.child !== child) return;
      // Give stderr's last lines a turn to arrive before telling why the process died.
      setImmediate(() =>
        this.fail(
          /heap out of memory|heap limit/i.test(this.stderr)
            ? overBudget(`needed more than its budget of ${this.budget.heapMiB} MiB of heap to render`)
            : overBudget("ended its rendering process"),
        ),
      );
    });
  }

  /** Ends the job in flight (if any) and stops its timer. */
  private finish(): Job | undefined {
    clearTimeout(this.timer);
    const job = this.current;
    this.current = undefined;
    return job;
  }

  /** The process is past saving (over budget or dead): its job fails and a new process takes the queue. */
  private fail(error: unknown): void {
    const child = this.child;
    const wasReady = this.ready;
    this.child = undefined;
    this.ready = false;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    const job = this.finish();
    job?.reject(error);
    // A process that could not even start would fail again: the queue fails with it.
    if (!wasReady && job === undefined) for (const waiting of this.queue.splice(0)) waiting.reject(error);
    this.next();
  }
}
