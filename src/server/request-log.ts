/** Log levels, most verbose first, as vLLM's (and uvicorn's) --log-level names them. */
export const LOG_LEVELS = ["debug", "info", "warning", "error", "critical"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where the server's log lines go; the CLI prints them, a library caller may collect them. */
export type LogSink = (level: LogLevel, line: string) => void;

/** What one request line reports, filled in by the route as it learns it. */
export interface RequestRecord {
  /** X-Request-Id, or the body's request_id once parsed. */
  requestId: string;
  readonly method: string;
  readonly path: string;
  readonly client: string;
  readonly arrival: number;
  promptTokens?: number;
  completionTokens?: number;
  finishReasons?: string[];
  /** A streaming response logs when its stream ends, not when its headers go out. */
  deferred?: boolean;
}

/**
 * The server's log in vLLM's manner: `INFO 12-03 14:51:22 [server] message`. One line per request
 * (unless request lines are off), every error with its request id.
 */
export class RequestLog {
  constructor(
    private readonly sink: LogSink | undefined,
    private readonly requestLines: boolean,
  ) {}

  write(level: LogLevel, message: string): void {
    if (this.sink === undefined) return;
    const d = new Date();
    const p = (n: number) => String(n).padStart(2, "0");
    const stamp = `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    this.sink(level, `${level.toUpperCase()} ${stamp} [server] ${message}`);
  }

  /** The request line: id, client, route, status, tokens, finish reasons and time. */
  request(record: RequestRecord, status: number): void {
    if (!this.requestLines) return;
    const seconds = ((performance.now() - record.arrival) / 1000).toFixed(3);
    const tokens =
      record.promptTokens !== undefined
        ? ` prompt_tokens=${record.promptTokens} completion_tokens=${record.completionTokens ?? 0}`
        : "";
    const finish = record.finishReasons?.length ? ` finish_reason=${record.finishReasons.join(",")}` : "";
    this.write(
      "info",
      `${record.requestId} ${record.client} "${record.method} ${record.path}" ${status}${tokens}${finish} ${seconds}s`,
    );
  }

  error(record: RequestRecord, status: number, code: string | null, message: string): void {
    this.write(
      status >= 500 ? "error" : "warning",
      `${record.requestId} "${record.method} ${record.path}" ${status} ${code ?? ""}: ${message}`,
    );
  }
}
