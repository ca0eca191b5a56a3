/**
 * The body path as production runs it: the app behind a real `Deno.serve` on
 * 127.0.0.1, requests written byte for byte over TCP so that the framing is
 * exactly what the test says (`Content-Length`, or chunked in several
 * pieces), and each test checks what the server saw of that framing before
 * trusting its answer.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  EVENT_TIMEOUT_MS,
  type Harness,
  ORIGIN,
  randomEntry,
  serve,
  withHarness,
  withTimeout,
} from "../_helpers/harness.ts";
import { readAnswer } from "../_helpers/raw_http.ts";

const LIMIT = 4096;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The framing headers of a request, as the server's handler saw them. */
interface Seen {
  contentLength: string | null;
  transferEncoding: string | null;
}

/** A server for the harness's app, and the requests its handler received. */
interface TestServer {
  port: number;
  /** Resolves when the handler receives the next request. */
  nextRequest(): Promise<Seen>;
}

async function withServer(
  h: Harness,
  fn: (server: TestServer) => Promise<void>,
): Promise<void> {
  const arrived: Seen[] = [];
  const waiting: ((seen: Seen) => void)[] = [];
  const server = serve(
    (req, info) => {
      const seen = {
        contentLength: req.headers.get("content-length"),
        transferEncoding: req.headers.get("transfer-encoding"),
      };
      const waiter = waiting.shift();
      if (waiter) waiter(seen);
      else arrived.push(seen);
      return h.app.fetch(req, { remoteAddr: info.remoteAddr });
    },
  );
  try {
    await fn({
      port: server.addr.port,
      nextRequest() {
        const seen = arrived.shift();
        if (seen) return Promise.resolve(seen);
        return withTimeout(
          new Promise<Seen>((resolve) => waiting.push(resolve)),
          EVENT_TIMEOUT_MS,
          "the server to receive the request",
        );
      },
    });
  } finally {
    await withTimeout(
      server.shutdown(),
      EVENT_TIMEOUT_MS,
      "the server to shut down",
    );
  }
}

/** Opens a connection, runs `fn` on it and closes it. */
async function withConnection(
  port: number,
  fn: (conn: Deno.Conn) => Promise<void>,
): Promise<void> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await fn(conn);
  } finally {
    conn.close();
  }
}

async function write(conn: Deno.Conn, data: string | Uint8Array) {
  let bytes = typeof data === "string" ? encoder.encode(data) : data;
  while (bytes.length > 0) bytes = bytes.subarray(await conn.write(bytes));
}

/** The head of a POST to the endpoint, with `headers` added. */
function requestHead(headers: Record<string, string>): string {
  const lines = [
    "POST /api/v1/logs HTTP/1.1",
    "Host: 127.0.0.1",
    "Content-Type: application/json",
    `Origin: ${ORIGIN}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return lines.join("\r\n") + "\r\n\r\n";
}

/** One chunk of a chunked body. */
function chunk(bytes: Uint8Array): Uint8Array {
  const size = encoder.encode(`${bytes.length.toString(16)}\r\n`);
  const out = new Uint8Array(size.length + bytes.length + 2);
  out.set(size);
  out.set(bytes, size.length);
  out.set(encoder.encode("\r\n"), size.length + bytes.length);
  return out;
}

/** The chunk that ends a chunked body. */
const LAST_CHUNK = "0\r\n\r\n";

/** Splits `bytes` into `n` pieces of about the same size. */
function split(bytes: Uint8Array, n: number): Uint8Array[] {
  const size = Math.ceil(bytes.length / n);
  return Array.from(
    { length: n },
    (_, i) => bytes.subarray(i * size, (i + 1) * size),
  );
}

interface Answer {
  status: number;
  body: { status: string; error?: { code: string; message: string } };
}

/** Reads one HTTP/1.1 answer with a JSON body from `conn`. */
async function answerOf(conn: Deno.Conn): Promise<Answer> {
  const answer = await withTimeout(
    readAnswer(conn),
    EVENT_TIMEOUT_MS,
    "the server's answer",
  );
  if (answer.status === 0) {
    throw new Error(`Connection closed after "${answer.head}"`);
  }
  return { status: answer.status, body: JSON.parse(answer.body) };
}

/** An entry of `projectId` whose UTF-8 JSON is exactly `size` bytes. */
function entryOfSize(projectId: string, size: number): Uint8Array {
  const entry = randomEntry({ projectId, data: { blob: "" } });
  const pad = size - encoder.encode(JSON.stringify(entry)).length;
  (entry.data as Record<string, string>).blob = "b".repeat(pad);
  const bytes = encoder.encode(JSON.stringify(entry));
  assert.equal(bytes.length, size);
  return bytes;
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as BlobPart]).stream()
    .pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Processes what was queued and returns the one stored entry's data. */
async function storedData(h: Harness, projectId: string) {
  await h.process();
  const logs = await h.logs(projectId);
  assert.equal(logs.length, 1);
  return logs[0]!.data;
}

function withBodyServer(fn: (h: Harness, server: TestServer) => Promise<void>) {
  return withHarness(
    (h) => withServer(h, (server) => fn(h, server)),
    { config: { maxBodyBytes: LIMIT } },
  );
}

Deno.test("a real server takes a body with Content-Length, sent in two writes, up to the limit", async (t) => {
  await withBodyServer(async (h, server) => {
    for (const size of [600, LIMIT]) {
      await t.step(`${size} bytes`, async () => {
        const project = await h.project();
        const body = entryOfSize(project.id, size);
        await withConnection(server.port, async (conn) => {
          await write(
            conn,
            requestHead({ "Content-Length": String(body.length) }),
          );
          await write(conn, body.subarray(0, 100));
          assert.deepEqual(await server.nextRequest(), {
            contentLength: String(size),
            transferEncoding: null,
          });
          await write(conn, body.subarray(100));
          const answer = await answerOf(conn);
          assert.equal(answer.status, 200);
          assert.deepEqual(answer.body, { status: "queued" });
        });
        assert.deepEqual(
          await storedData(h, project.id),
          JSON.parse(decoder.decode(body)).data,
        );
      });
    }
  });
});

Deno.test("a real server answers 413 to a Content-Length over the limit before the body arrives", async (t) => {
  await withBodyServer(async (h, server) => {
    const cases: [string, number][] = [["no body sent", 0], [
      "part sent",
      1000,
    ]];
    for (const [name, sent] of cases) {
      await t.step(name, async () => {
        await withConnection(server.port, async (conn) => {
          await write(conn, requestHead({ "Content-Length": `${LIMIT + 1}` }));
          if (sent > 0) await write(conn, new Uint8Array(sent).fill(32));
          assert.deepEqual(await server.nextRequest(), {
            contentLength: String(LIMIT + 1),
            transferEncoding: null,
          });
          // The rest of the body is never sent: only an early answer comes.
          const answer = await answerOf(conn);
          assert.equal(answer.status, 413);
          assert.equal(answer.body.error?.code, "payload_too_large");
          assert.match(answer.body.error!.message, /4096 bytes/);
        });
      });
    }
    await h.process();
    assert.deepEqual(h.batches, []);
  });
});

Deno.test("a real server takes a chunked body sent in several chunks", async () => {
  await withBodyServer(async (h, server) => {
    const project = await h.project();
    const body = entryOfSize(project.id, LIMIT);
    const [first, ...rest] = split(body, 4);
    await withConnection(server.port, async (conn) => {
      await write(conn, requestHead({ "Transfer-Encoding": "chunked" }));
      await write(conn, chunk(first!));
      assert.deepEqual(await server.nextRequest(), {
        contentLength: null,
        transferEncoding: "chunked",
      });
      for (const piece of rest) await write(conn, chunk(piece));
      await write(conn, LAST_CHUNK);
      const answer = await answerOf(conn);
      assert.equal(answer.status, 200);
    });
    assert.deepEqual(
      await storedData(h, project.id),
      JSON.parse(decoder.decode(body)).data,
    );
  });
});

Deno.test("a real server answers 413 once chunks pass the limit, without waiting for the end", async () => {
  await withBodyServer(async (h, server) => {
    await withConnection(server.port, async (conn) => {
      await write(conn, requestHead({ "Transfer-Encoding": "chunked" }));
      await write(conn, chunk(new Uint8Array(2000).fill(32)));
      assert.deepEqual(await server.nextRequest(), {
        contentLength: null,
        transferEncoding: "chunked",
      });
      await write(conn, chunk(new Uint8Array(2000).fill(32)));
      await write(conn, chunk(new Uint8Array(2000).fill(32)));
      // No last chunk: the body never ends.
      const answer = await answerOf(conn);
      assert.equal(answer.status, 413);
      assert.equal(answer.body.error?.code, "payload_too_large");
    });
    await h.process();
    assert.deepEqual(h.batches, []);
  });
});

Deno.test("a real server takes a gzip body sent in several pieces, chunked or with Content-Length", async (t) => {
  await withBodyServer(async (h, server) => {
    for (const framing of ["chunked", "Content-Length"] as const) {
      await t.step(framing, async () => {
        const project = await h.project();
        const body = entryOfSize(project.id, LIMIT);
        const compressed = await gzip(body);
        const [first, ...rest] = split(compressed, 3);
        assert.ok(rest.every((piece) => piece.length > 0));
        await withConnection(server.port, async (conn) => {
          await write(
            conn,
            requestHead({
              "Content-Encoding": "gzip",
              ...(framing === "chunked"
                ? { "Transfer-Encoding": "chunked" }
                : { "Content-Length": String(compressed.length) }),
            }),
          );
          const frame = (piece: Uint8Array) =>
            framing === "chunked" ? chunk(piece) : piece;
          await write(conn, frame(first!));
          assert.deepEqual(
            await server.nextRequest(),
            framing === "chunked"
              ? { contentLength: null, transferEncoding: "chunked" }
              : {
                contentLength: String(compressed.length),
                transferEncoding: null,
              },
          );
          for (const piece of rest) await write(conn, frame(piece));
          if (framing === "chunked") await write(conn, LAST_CHUNK);
          const answer = await answerOf(conn);
          assert.equal(answer.status, 200);
        });
        assert.deepEqual(
          await storedData(h, project.id),
          JSON.parse(decoder.decode(body)).data,
        );
      });
    }
  });
});

Deno.test("a real server answers 413 to gzip chunks past the limit, compressed or decompressed", async (t) => {
  await withBodyServer(async (h, server) => {
    const project = await h.project();
    /** Sends `compressed` in three chunks, with the last chunk or not. */
    const send = async (compressed: Uint8Array, end: boolean) => {
      let answer: Answer | undefined;
      await withConnection(server.port, async (conn) => {
        await write(
          conn,
          requestHead({
            "Content-Encoding": "gzip",
            "Transfer-Encoding": "chunked",
          }),
        );
        const [first, ...rest] = split(compressed, 3);
        await write(conn, chunk(first!));
        assert.equal((await server.nextRequest()).transferEncoding, "chunked");
        for (const piece of rest) await write(conn, chunk(piece));
        if (end) await write(conn, LAST_CHUNK);
        answer = await answerOf(conn);
      });
      return answer!;
    };
    await t.step("decompressed size over the limit", async () => {
      const compressed = await gzip(entryOfSize(project.id, LIMIT + 1));
      assert.ok(compressed.length < LIMIT, "compressed, it is under the limit");
      const answer = await send(compressed, true);
      assert.equal(answer.status, 413);
      assert.equal(answer.body.error?.code, "payload_too_large");
    });
    await t.step(
      "compressed size over the limit, the body never ending",
      async () => {
        // Random bytes do not compress: 4090 of them take more than 4096
        // gzipped, though they decompress to less than the limit.
        const noise = await gzip(crypto.getRandomValues(new Uint8Array(4090)));
        assert.ok(noise.length > LIMIT);
        const answer = await send(noise, false);
        assert.equal(answer.status, 413);
        assert.equal(answer.body.error?.code, "payload_too_large");
      },
    );
    await h.process();
    assert.deepEqual(h.batches, []);
  });
});
