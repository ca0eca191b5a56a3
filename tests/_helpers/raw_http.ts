/**
 * Requests written by hand on a TCP connection, for what `fetch` will not
 * send: any `Host` header, and a chunked body of hundreds of megabytes that
 * stops as soon as the server answers, with the process's resident memory
 * sampled while it is sent.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A server's answer as read off the wire. */
export interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/** Splits the start of an answer into status, head and what follows. */
function parseAnswer(text: string): RawAnswer {
  const end = text.indexOf("\r\n\r\n");
  const head = end < 0 ? text : text.slice(0, end);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? "0");
  return { status, head, body: end < 0 ? "" : text.slice(end + 4) };
}

/**
 * Reads one answer off `conn`: its head, then the body its `Content-Length`
 * announces (it stops reading there, so that a kept-alive connection can
 * carry the next request), or, without one, until the server closes. An
 * answer cut short by the close is returned as far as it came.
 *
 * @example
 * ```ts
 * await conn.write(request);
 * const { status, body } = await readAnswer(conn);
 * ```
 */
export async function readAnswer(conn: Deno.Conn): Promise<RawAnswer> {
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(16384);
  let text = "";
  for (;;) {
    const answer = parseAnswer(text);
    const length = /^content-length: *(\d+)/im.exec(answer.head)?.[1];
    if (text.includes("\r\n\r\n") && length !== undefined) {
      const body = encoder.encode(answer.body);
      if (body.length >= Number(length)) {
        return { ...answer, body: decoder.decode(body.subarray(0, +length)) };
      }
    }
    const n = await conn.read(buffer);
    if (n === null) return answer;
    text += decoder.decode(buffer.subarray(0, n), { stream: true });
  }
}

/**
 * Sends `GET path` with the given `Host` (and `headers`) on a connection of
 * its own and reads the whole answer (`Connection: close`).
 */
export async function rawGet(
  port: number,
  path: string,
  host: string,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const lines = [
      `GET ${path} HTTP/1.1`,
      `Host: ${host}`,
      "Connection: close",
    ];
    for (const [name, value] of Object.entries(headers)) {
      lines.push(`${name}: ${value}`);
    }
    await conn.write(encoder.encode(`${lines.join("\r\n")}\r\n\r\n`));
    return await readAnswer(conn);
  } finally {
    conn.close();
  }
}

/** What sending a large chunked body cost and got. */
export interface ChunkedResult {
  /** Status of the answer; 0 when none came. */
  status: number;
  body: string;
  /** Bytes of body written before the answer came (or writing failed). */
  sent: number;
  /** Highest `Deno.memoryUsage().rss` seen while sending, minus the start. */
  rssGrowth: number;
  /** Time from the first byte written to the answer. */
  ms: number;
}

/**
 * POSTs a chunked body of `totalBytes` (form-like text) to `path`, writing
 * until the server answers, stops reading or closes, or `totalBytes` are
 * sent; gives up after `timeoutMs`.
 */
export async function postChunked(
  port: number,
  path: string,
  options: {
    totalBytes: number;
    headers?: Record<string, string>;
    chunkBytes?: number;
    timeoutMs?: number;
    /** @default {"POST"} */
    method?: string;
  },
): Promise<ChunkedResult> {
  const chunkBytes = options.chunkBytes ?? 256 * 1024;
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const head = [
    `${options.method ?? "POST"} ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    "Content-Type: application/x-www-form-urlencoded",
    "Transfer-Encoding: chunked",
    ...Object.entries(options.headers ?? {}).map(([n, v]) => `${n}: ${v}`),
  ].join("\r\n") + "\r\n\r\n";
  const payload = "password=" + "a".repeat(chunkBytes - 9);
  const frame = encoder.encode(
    `${chunkBytes.toString(16)}\r\n${payload}\r\n`,
  );
  const rss0 = Deno.memoryUsage().rss;
  let peak = rss0;
  let sent = 0;
  const started = performance.now();
  let answeredAt = 0;
  const answer = (async () => {
    let text = "";
    const buffer = new Uint8Array(65536);
    try {
      while (!text.includes("\r\n\r\n")) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += decoder.decode(buffer.subarray(0, n), { stream: true });
      }
      // The rest of a short page, if it comes at once.
      if (/content-length: (\d+)/i.test(text)) {
        const length = Number(/content-length: (\d+)/i.exec(text)![1]);
        while (encoder.encode(parseAnswer(text).body).length < length) {
          const n = await conn.read(buffer);
          if (n === null) break;
          text += decoder.decode(buffer.subarray(0, n), { stream: true });
        }
      }
    } catch { /* closed by the writer's side */ }
    answeredAt = performance.now();
    return text;
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const write = (async () => {
    try {
      await conn.write(encoder.encode(head));
      while (sent < options.totalBytes && answeredAt === 0) {
        await conn.write(frame);
        sent += chunkBytes;
        if ((sent / chunkBytes) % 4 === 0) {
          peak = Math.max(peak, Deno.memoryUsage().rss);
        }
      }
      if (answeredAt === 0) await conn.write(encoder.encode("0\r\n\r\n"));
    } catch { /* the server closed the connection or stopped reading */ }
  })();
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, options.timeoutMs ?? 30_000);
  });
  try {
    await Promise.race([answer, deadline]);
    peak = Math.max(peak, Deno.memoryUsage().rss);
  } finally {
    clearTimeout(timer);
    conn.close();
    await write;
  }
  const text = await answer;
  const parsed = parseAnswer(text);
  return {
    status: parsed.status,
    body: parsed.body,
    sent,
    rssGrowth: peak - rss0,
    ms: (answeredAt || performance.now()) - started,
  };
}
