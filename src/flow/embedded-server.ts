import { buildKey, type KvLayout } from "../catalog/index.js";
import type { LoadedModel } from "../engine/index.js";
import { type RunningServer, startServer } from "../server/index.js";
import { weightsChecksum } from "./model-cache.js";

/** How every embedded server of one bring-up is started; builds differ in KV layout and switches. */
export interface EmbeddedServerOptions {
  readonly model: LoadedModel;
  readonly servedModelName: string;
  readonly maxModelLen: number;
  /** One KV byte budget for every build, so their token capacities compare (default: the engine's). */
  readonly kvCacheBytes?: number;
  readonly blockSize: number;
  readonly maxNumSeqs: number;
  /** The most tokens one engine step runs (default: the engine's). */
  readonly maxNumBatchedTokens?: number;
  /** Tokens the model's MTP layer drafts per step (default: no drafting). */
  readonly speculativeTokens?: number;
  readonly threads?: number;
  /** The model's switches this build serves with. */
  readonly switches?: Readonly<Record<string, string>>;
}

/**
 * An embedded server on 127.0.0.1 that can be restarted as another build (KV layout and switches)
 * on the same port, so a same-pod A/B reaches both arms at one URL.
 */
export class EmbeddedServer {
  private constructor(
    private readonly options: EmbeddedServerOptions,
    private running: RunningServer | undefined,
    private current: KvLayout,
    private currentSwitches: Readonly<Record<string, string>> | undefined,
    private currentModel: LoadedModel,
    private readonly port: number,
    private currentChecksum: string | undefined,
  ) {}

  /** The served weights' checksum, when they were loaded from a directory. */
  get weightsChecksum(): string | undefined {
    return this.currentChecksum;
  }

  /** Starts the server as `layout` on a free port. */
  static async start(options: EmbeddedServerOptions, layout: KvLayout): Promise<EmbeddedServer> {
    const directory = options.model.directory;
    const checksum = directory === undefined ? undefined : await weightsChecksum(directory);
    const running = await launch(options, layout, 0);
    const port = Number(new URL(running.url).port);
    return new EmbeddedServer(options, running, layout, options.switches, options.model, port, checksum);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The step size it was started with, when not the engine's default. */
  get maxNumBatchedTokens(): number | undefined {
    return this.options.maxNumBatchedTokens;
  }

  /** The tokens it drafts per step, when it drafts. */
  get speculativeTokens(): number | undefined {
    return this.options.speculativeTokens;
  }

  get layout(): KvLayout {
    return this.current;
  }

  /** The engine steps on a thread of its own, so /health never waits for a step. */
  get engineThread(): boolean {
    return this.running?.engineThread ?? false;
  }

  /**
   * Stops the server and starts it again as `layout` with `switches` (default: those it was first
   * started with), serving `model` (default: the one it was first started with), on the same port;
   * nothing to do when it already serves that build.
   */
  async restartAs(
    layout: KvLayout,
    switches = this.options.switches,
    model: LoadedModel = this.options.model,
  ): Promise<void> {
    const same = buildKey({ kv_layout: layout, ...(switches ? { switches } : {}) });
    const current = buildKey({
      kv_layout: this.current,
      ...(this.currentSwitches ? { switches: this.currentSwitches } : {}),
    });
    if (this.running !== undefined && same === current && model === this.currentModel) return;
    await this.close();
    const { switches: _started, ...common } = this.options;
    this.running = await launch({ ...common, model, ...(switches ? { switches } : {}) }, layout, this.port);
    this.current = layout;
    this.currentSwitches = switches;
    if (model !== this.currentModel) {
      this.currentModel = model;
      this.currentChecksum =
        model.directory === undefined ? undefined : await weightsChecksum(model.directory);
    }
  }

  /** Stops listening and stops the engine; safe to call twice. */
  async close(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    await running?.close();
  }
}

function launch(options: EmbeddedServerOptions, layout: KvLayout, port: number): Promise<RunningServer> {
  // A model read from a directory runs on an engine thread of its own that loads the directory
  // itself, so /health never waits for a step; one only in memory steps on the HTTP thread.
  const directory = options.model.directory;
  return startServer({
    ...(directory !== undefined ? { modelDir: directory } : { model: options.model }),
    host: "127.0.0.1",
    port,
    servedModelName: options.servedModelName,
    maxModelLen: options.maxModelLen,
    maxNumSeqs: options.maxNumSeqs,
    blockSize: options.blockSize,
    kvLayout: layout,
    ...(options.kvCacheBytes !== undefined ? { kvCacheBytes: options.kvCacheBytes } : {}),
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    ...(options.maxNumBatchedTokens !== undefined
      ? { maxNumBatchedTokens: options.maxNumBatchedTokens }
      : {}),
    ...(options.switches !== undefined ? { switches: options.switches } : {}),
    ...(options.speculativeTokens !== undefined ? { speculativeTokens: options.speculativeTokens } : {}),
  });
}
