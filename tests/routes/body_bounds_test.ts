/**
 * Bodies built to cost the server more than they weigh, sent over real
 * sockets to the app behind `Deno.serve`: a gzip bomb (real gzip from
 * `CompressionStream`) and a chunked body whose chunk extension is 100 KB.
 * What each costs is measured (process CPU time, RSS), not read from the
 * code; the margins are wide so that a loaded machine does not fail them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cpuUsage } from "node:process";
import { createApp } from "../../app.ts";
import { ErrorLog } from "../../routes/error_log.ts";
import { type Harness, withHarness, withServed } from "../_helpers/harness.ts";
import { readAnswer } from "../_helpers/raw_http.ts";
import { within } from "../_helpers/timeout.ts";
import { peakRss } from "../_helpers/memory.ts";

const encoder = new TextEncoder();
const LIMIT = 65536;
/** What the bomb inflates to: 60 MB, as found from outside. */
const BOMB_BYTES = 60 << 20;

/** `bytes` gzipped by the runtime's `CompressionStream`. */
async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as BlobPart]).stream()
    .pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** An entry whose `data` is followed by megabytes of spaces, gzipped. */
async function gzipBomb(): Promise<Uint8Array> {
  const body = new Uint8Array(BOMB_BYTES).fill(32);
  body.set(encoder.encode('{"level":"info","projectId":"p","data":{}'));
  body[BOMB_BYTES - 1] = 125; // "}"
  return await gzip(body);
}

/** The app of `h` with a captured error log, served on a loopback port. */
async function serving(
  h: Harness,
  fn: (port: number, logged: string[]) => Promise<void>,
): Promise<void> {
  const logged: string[] = [];
  const app = createApp({
    producer: h.pipeline.producer,
    maxBodyBytes: h.config.maxBodyBytes,
    now: h.clock.now,
    errorLog: new ErrorLog({ write: (line) => logged.push(line) }),
  });
  await withServed(
    (req, info) => app.fetch(req, info),
    (port) => fn(port, logged),
  );
}

/** Writes `head` then `body` on a new connection and reads the answer. */
async function exchange(
  port: number,
  head: string,
  body: Uint8Array,
): Promise<{ status: number; json: { error?: Record<string, unknown> } }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const headBytes = encoder.encode(head);
    const bytes = new Uint8Array(headBytes.length + body.length);
    bytes.set(headBytes);
    bytes.set(body, headBytes.length);
    // The server may answer and close before it has read everything.
    const writing = (async () => {
      let rest = bytes;
      while (rest.length > 0) rest = rest.subarray(await conn.write(rest));
    })().catch(() => {});
    const answer = await readAnswer(conn);
    await writing;
    return { status: answer.status, json: JSON.parse(answer.body || "{}") };
  } finally {
    conn.close();
  }
}

function postHead(headers: Record<string, string>): string {
  return [
    "POST /api/v1/logs HTTP/1.1",
    "Host: 127.0.0.1",
    "Content-Type: application/json",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ].join("\r\n") + "\r\n\r\n";
}

/** CPU time of this process (user and system), in milliseconds. */
function cpuMs(): number {
  const { user, system } = cpuUsage();
  return (user + system) / 1000;
}

Deno.test("a gzip bomb answers 413 and is inflated only up to the body limit: under 30 ms of CPU each, 16 at once under +64 MB", async () => {
  const bomb = await gzipBomb();
  assert.ok(bomb.length < LIMIT, `the bomb is ${bomb.length} bytes gzipped`);
  await withHarness(async (h) => {
    await serving(h, async (port, logged) => {
      const send = () =>
        exchange(
          port,
          postHead({
            "Content-Encoding": "gzip",
            "Content-Length": String(bomb.length),
          }),
          bomb,
        );
      // Warm up the server and the client side once.
      const first = await send();
      assert.equal(first.status, 413);
      assert.equal(first.json.error?.code, "payload_too_large");

      const rounds = 8;
      const cpuStart = cpuMs();
      for (let i = 0; i < rounds; i++) {
        assert.equal((await send()).status, 413);
      }
      const perBomb = (cpuMs() - cpuStart) / rounds;
      console.log(`gzip bomb: ${perBomb.toFixed(1)} ms of CPU each`);
      assert.ok(perBomb <= 30, `${perBomb.toFixed(1)} ms of CPU per bomb`);

      const before = Deno.memoryUsage().rss;
      const [answers, peak] = await peakRss(() =>
        Promise.all(Array.from({ length: 16 }, send))
      );
      const grew = (peak - before) / 2 ** 20;
      console.log(`16 gzip bombs at once: RSS +${grew.toFixed(1)} MB`);
      assert.deepEqual(answers.map((a) => a.status), Array(16).fill(413));
      assert.ok(grew <= 64, `RSS grew by ${grew.toFixed(1)} MB`);
      assert.deepEqual(logged, []);
    });
  }, { config: { maxBodyBytes: LIMIT } });
});

Deno.test("a chunk extension of 100 KB answers 400 invalid_body, not 503, and logs nothing", async (t) => {
  await withHarness(async (h) => {
    await serving(h, async (port, logged) => {
      for (const size of [5_000, 100_000]) {
        await t.step(`${size} bytes of extension`, async () => {
          const body = encoder.encode(
            `2;ext=${"a".repeat(size)}\r\n{}\r\n0\r\n\r\n`,
          );
          const answer = await within(
            5000,
            "the answer",
            exchange(port, postHead({ "Transfer-Encoding": "chunked" }), body),
          );
          assert.equal(answer.status, 400);
          assert.equal(answer.json.error?.code, "invalid_body");
          assert.match(
            String(answer.json.error?.message),
            /chunked framing is malformed/,
          );
        });
      }
      await t.step("a short extension is still read", async () => {
        const entry = '{"level":"info","projectId":"p","data":{}}';
        const body = encoder.encode(
          `${entry.length.toString(16)};name=value\r\n${entry}\r\n0\r\n\r\n`,
        );
        const answer = await exchange(
          port,
          postHead({ "Transfer-Encoding": "chunked" }),
          body,
        );
        assert.equal(answer.status, 200);
      });
      assert.deepEqual(logged, []);
    });
  });
});
