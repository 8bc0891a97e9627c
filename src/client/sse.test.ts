import { describe, expect, it } from "vitest";
import { readTokenStream, SseParser } from "./sse.js";

async function* bytes(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield new TextEncoder().encode(part);
}

describe("SseParser", () => {
  it("splits events across chunk borders and line-end styles", () => {
    const parser = new SseParser();
    expect(parser.push("data: a", 1)).toEqual([]);
    expect(parser.push("bc\r", 2)).toEqual([]);
    const events = parser.push("\n\r\n: keep-alive\nevent: x\ndata: 1\ndata: 2\n\n", 3);
    expect(events).toEqual([
      { event: "message", data: "abc", receivedAt: 3 },
      { event: "x", data: "1\n2", receivedAt: 3 },
    ]);
    expect(parser.pending).toBe(false);
    parser.push("data: half", 4);
    expect(parser.pending).toBe(true);
  });

  it("reads a large read of LF events that ends in CRLF and CR-only ones", () => {
    const parser = new SseParser();
    const text = `${"data: x\n\n".repeat(1000)}data: y\r\ndata: z\r\n\r\ndata\r\rid: 7\ndata: w\n\n`;
    const events = parser.push(text, 5);
    expect(events.length).toBe(1003);
    expect(events.slice(1000)).toEqual([
      { event: "message", data: "y\nz", receivedAt: 5 },
      { event: "message", data: "", receivedAt: 5 },
      { event: "message", data: "w", id: "7", receivedAt: 5 },
    ]);
    expect(parser.pending).toBe(false);
  });
});

describe("readTokenStream", () => {
  it("counts tokens by logprobs when a chunk carries several, and reads usage", async () => {
    const chunk = (text: string, tokens?: string[]) =>
      `data: ${JSON.stringify({ choices: [{ text, ...(tokens ? { logprobs: { tokens } } : {}) }] })}\n\n`;
    const stream = await readTokenStream(
      bytes(
        chunk("a"),
        chunk("bc", ["b", "c"]),
        `data: ${JSON.stringify({ choices: [{ text: "", finish_reason: "length" }] })}\n\n`,
        `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 3 } })}\n\n`,
        "data: [DONE]\n\n",
      ),
    );
    expect(stream.chunks.map((c) => c.tokens)).toEqual([1, 2]);
    expect(stream.usage).toEqual({ promptTokens: 4, completionTokens: 3 });
    expect(stream.finishReason).toBe("length");
    expect(stream.done).toBe(true);
  });

  it("stamps each chunk with the read that completed its event", async () => {
    let clock = 0;
    const chunk = `data: ${JSON.stringify({ choices: [{ text: "a" }] })}`;
    const reads: number[] = [];
    const stream = await readTokenStream(bytes(`${chunk}\n\n${chunk}`, "\n\n", "data: [DONE]\n\n"), {
      now: () => ++clock,
      onRead: () => reads.push(clock),
    });
    expect(stream.chunks.map((c) => c.receivedAt)).toEqual([1, 2]);
    expect(reads.length).toBe(3);
  });

  it("reads chat deltas", async () => {
    const stream = await readTokenStream(
      bytes(`data: ${JSON.stringify({ choices: [{ delta: { content: "hi" } }] })}\n\n`, "data: [DONE]\n\n"),
    );
    expect(stream.chunks[0]?.text).toBe("hi");
  });

  it("names malformed data, error events and truncation", async () => {
    await expect(readTokenStream(bytes("data: {oops\n\n"))).rejects.toMatchObject({ code: "SSE_MALFORMED" });
    await expect(readTokenStream(bytes('data: {"choices": 3}\n\n'))).rejects.toMatchObject({
      code: "SSE_MALFORMED",
    });
    await expect(
      readTokenStream(bytes(`data: ${JSON.stringify({ error: { message: "boom" } })}\n\n`)),
    ).rejects.toMatchObject({ code: "SSE_ERROR_EVENT" });
    await expect(
      readTokenStream(bytes(`data: ${JSON.stringify({ choices: [{ text: "a" }] })}\n\ndata: {`)),
    ).rejects.toMatchObject({ code: "SSE_TRUNCATED", message: /inside an event/ });
  });
});
