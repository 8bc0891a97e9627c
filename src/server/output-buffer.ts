import { BringupError } from "../common/errors.js";
import { OutputQueue, type StepOutput } from "../engine/index.js";

/**
 * Step outputs a client has not read yet. A client that stops reading holds socket buffers (which
 * apply backpressure) and then this queue; past `limit` unread outputs the request is aborted, so
 * its KV blocks go back and its memory stops growing.
 */
export class OutputBuffer extends OutputQueue<StepOutput> {
  constructor(
    private readonly limit: number,
    /** Stops the request in the engine (the client left or fell too far behind). */
    private readonly abort: () => void,
    /** Told at once when the limit is passed: a route blocked writing to the client can stop. */
    private readonly onOverflow?: (error: BringupError) => void,
  ) {
    super(abort);
  }

  override push(item: StepOutput): void {
    super.push(item);
    if (this.unread <= this.limit) return;
    const error = new BringupError(
      "CLIENT_TOO_SLOW",
      `the client left ${this.limit} outputs unread, so the request was aborted; read the stream as it arrives.`,
    );
    this.fail(error);
    this.abort();
    this.onOverflow?.(error);
  }
}
