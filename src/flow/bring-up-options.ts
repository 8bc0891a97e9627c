// What a caller of bringUp chooses: the port, the target (embedded or an endpoint), quick-run sizes,
// where outputs go, and the hooks a display listens on.
import type { ProgressEvent, StageEvent } from "./summary.js";
import type { SweepSize } from "./sweep-stage.js";

export interface BringUpOptions {
  /** The project root holding ports/ (and where the site and the model cache go by default). */
  readonly root: string;
  /** The port to bring up (default: DEFAULT_PORT). */
  readonly port?: string;
  /** Run the gates and A/Bs against this OpenAI-compatible endpoint instead of the embedded server. */
  readonly endpoint?: string;
  /** With `endpoint`: the baseline build (the reference section's `baseline`) for gates that compare and A/B arms. */
  readonly reference?: string;
  /** With `endpoint`: the model id to send (default: the endpoint's own). */
  readonly model?: string;
  readonly apiKey?: string;
  /** Where tiny reference models are cached (default: <root>/.cache/bringup/models). */
  readonly cacheDir?: string;
  /** Needle context lengths to run instead of the manifest's (for quick runs). */
  readonly needleContexts?: readonly number[];
  /** Smaller A/Bs than the manifest's (for quick runs). */
  readonly benchmarkSize?: {
    readonly promptTokens?: number;
    readonly outputTokens?: number;
    readonly blocks?: number;
  };
  /**
   * The throughput-latency sweep of the build against the baseline on the embedded engine: sizes
   * over DEFAULT_SWEEP's (concurrency 1 and 2, short requests), or false to leave it out.
   */
  readonly sweep?: false | Partial<SweepSize>;
  /** Build the site at the end (default true); it includes the local records, marked local. */
  readonly site?: boolean;
  /** Where the site is built (default: <root>/site-out, as `bringup site build`). */
  readonly siteDir?: string;
  /** Matmul threads of each embedded engine (default: all cores). */
  readonly threads?: number;
  /** The command line the records name (default: `bringup up <port>`). */
  readonly command?: string;
  /** Stops the run: servers close, what was recorded stays, the summary says `aborted`. */
  readonly signal?: AbortSignal;
  readonly onStage?: (event: StageEvent) => void;
  readonly onProgress?: (event: ProgressEvent) => void;
}

/** Long prompts prefill slowly on two cores: requests to the embedded servers may take this long. */
export const EMBEDDED_REQUEST_TIMEOUT_MS = 30 * 60_000;
export const ENDPOINT_REQUEST_TIMEOUT_MS = 10 * 60_000;
