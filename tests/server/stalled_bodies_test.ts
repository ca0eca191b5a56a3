/**
 * What bodies that arrive slowly cost the server, measured (RSS), over real
 * sockets: a thousand 64 KiB bodies that stall part-way against the server
 * as `main.ts` runs it, and bodies trickled one byte per chunk.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import { startServer, stopServer } from "../_helpers/disk.ts";
import { harness, serve } from "../_helpers/harness.ts";

const encoder = new TextEncoder();

/** The resident memory of process `pid`, in MiB, as `ps` reads it. */
async function rssOf(pid: number): Promise<number> {
  const { stdout } = await new Deno.Command("ps", {
    args: ["-o", "rss=", "-p", String(pid)],
    stdout: "piped",
  }).output();
  return Number(new TextDecoder().decode(stdout).trim()) / 1024;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let rest = bytes;
  while (rest.length > 0) rest = rest.subarray(await conn.write(rest));
}

Deno.test({
  name:
    "1,000 bodies of 64 KiB that stall part-way cost the server under +150 MB of RSS",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const dir = await Deno.makeTempDir();
    // Memory is measured, not the body timeout: a slow machine opening the
    // 1,000 connections must not see the first ones answered 408.
    const server = await startServer({
      KV_PATH: `${dir}/kv.sqlite`,
      BODY_TIMEOUT_MS: "600000",
    });
    const conns: Deno.Conn[] = [];
    try {
      const pid = server.child.pid;
      for (let i = 0; i < 100; i++) {
        const res = await fetch(`${server.url}/api/v1/logs`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: '{"level":"info","projectId":"p","data":{}}',
        });
        await res.body?.cancel();
      }
      await sleep(300);
      const before = await rssOf(pid);
      const { port } = new URL(server.url);
      const head = encoder.encode(
        "POST /api/v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
          "Content-Type: application/json\r\nContent-Length: 65536\r\n\r\n",
      );
      // Most of the body, then nothing more.
      const part = new Uint8Array(60_000).fill(32);
      part[0] = 123;
      /** The status line of each answer that came. */
      const answers: string[] = [];
      for (let i = 0; i < 1000; i++) {
        const conn = await Deno.connect({
          hostname: "127.0.0.1",
          port: Number(port),
        });
        conns.push(conn);
        await writeAll(conn, head);
        await writeAll(conn, part);
        const buffer = new Uint8Array(1024);
        conn.read(buffer).then((n) => {
          if (n === null) return;
          const text = new TextDecoder().decode(buffer.subarray(0, n));
          answers.push(text.slice(0, text.indexOf("\r\n")));
        }, () => {});
      }
      let peak = 0;
      for (let i = 0; i < 12; i++) {
        await sleep(250);
        peak = Math.max(peak, await rssOf(pid));
      }
      const grew = peak - before;
      const refused = answers.filter((line) => / 503 /.test(line)).length;
      console.log(
        `1,000 stalled bodies: server RSS ${before.toFixed(0)} -> ${
          peak.toFixed(0)
        } MB (+${grew.toFixed(0)} MB), ${refused} answered 503 at once`,
      );
      // Past the body budget, the rest are refused before being read, and
      // nothing else is answered while the bodies stall.
      assert.ok(refused > 0, "no body was refused past the budget");
      assert.deepEqual(
        answers.filter((line) => !/ 503 /.test(line)),
        [],
        "answers other than 503",
      );
      assert.ok(grew <= 150, `RSS grew by ${grew.toFixed(0)} MB`);
    } finally {
      for (const conn of conns) {
        try {
          conn.close();
        } catch { /* closed by the server */ }
      }
      await stopServer(server);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a chunked body trickled one byte per chunk holds its bytes, not a buffer per chunk", async () => {
  const h = await harness();
  const app = createApp({
    producer: h.pipeline.producer,
    maxBodyBytes: h.config.maxBodyBytes,
  });
  const server = serve((req, info) => app.fetch(req, info));
  const conns: Deno.TcpConn[] = [];
  try {
    const text = `{"level":"info","projectId":"p","data":{"s":"${
      "x".repeat(2000)
    }"}}`;
    const head = encoder.encode(
      "POST /api/v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    for (let i = 0; i < 4; i++) {
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: server.addr.port,
      });
      conn.setNoDelay(true);
      await writeAll(conn, head);
      conns.push(conn);
    }
    // Buffers are counted as V8 sees them (`external`): a buffer of 64 KiB
    // holding one byte touches a single page, so RSS would hide most of it.
    const before = Deno.memoryUsage().external;
    let peak = before;
    for (let i = 0; i < text.length; i++) {
      const chunk = encoder.encode(`1\r\n${text[i]}\r\n`);
      for (const conn of conns) await writeAll(conn, chunk);
      // Let each byte arrive on its own.
      await sleep(0);
      if (i % 50 === 0) peak = Math.max(peak, Deno.memoryUsage().external);
    }
    const answers = await Promise.all(conns.map(async (conn) => {
      await writeAll(conn, encoder.encode("0\r\n\r\n"));
      const buffer = new Uint8Array(1024);
      const n = await conn.read(buffer);
      return new TextDecoder().decode(buffer.subarray(0, n ?? 0));
    }));
    peak = Math.max(peak, Deno.memoryUsage().external);
    const grew = (peak - before) / 2 ** 20;
    console.log(
      `4 bodies of ${text.length} one-byte chunks: buffers +${
        grew.toFixed(0)
      } MB at most`,
    );
    for (const answer of answers) assert.match(answer, /^HTTP\/1\.1 200 /);
    // A 64 KiB buffer kept per chunk would be 4 × 2,000 × 64 KiB = 500 MB.
    assert.ok(grew <= 150, `buffers grew by ${grew.toFixed(0)} MB`);
  } finally {
    for (const conn of conns) conn.close();
    await server.shutdown();
    await h.close();
  }
});
