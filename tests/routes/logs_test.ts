import assert from "node:assert/strict";
import {
  harnessTest,
  ORIGIN,
  preflight,
  randomEntry,
  signEntry,
  withHarness,
} from "../_helpers/harness.ts";

async function gzip(text: string | Uint8Array): Promise<Uint8Array> {
  const bytes = typeof text === "string"
    ? new TextEncoder().encode(text)
    : text;
  const stream = new Blob([bytes as BlobPart]).stream()
    .pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function chunked(bytes: Uint8Array, size = 1024): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

/** The error of an answer that must have `status`, checked to be an error. */
async function errorOf(res: Response, status: number) {
  assert.equal(res.status, status);
  const body = await res.json();
  assert.equal(body.status, "error");
  return body.error as {
    code: string;
    message: string;
    issues?: { path: string; message: string }[];
  };
}

/** Asserts that a header's list (`what` it is) names each of `names`. */
function assertNamesAll(list: string, what: string, names: string[]): void {
  for (const name of names) assert.ok(list.includes(name), `${name} ${what}`);
}

Deno.test("POST /api/v1/logs answers 200 queued for a valid entry", async (t) => {
  await withHarness(async (h) => {
    for (
      const type of [
        "application/json",
        "application/json; charset=utf-8",
        'application/json; charset="UTF-8"',
        "text/plain",
        "text/plain;charset=UTF-8",
      ]
    ) {
      await t.step(`with Content-Type ${type}`, async () => {
        const res = await h.post(randomEntry(), { "Content-Type": type });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-type"), "application/json");
        assert.deepEqual(await res.json(), { status: "queued" });
      });
    }
    await t.step("with a custom level name", async () => {
      const res = await h.post(randomEntry({ level: "audit_trail-2" }));
      assert.equal(res.status, 200);
    });
    await t.step("with device sent as a string", async () => {
      const res = await h.post(randomEntry({ device: "iPhone 15" }));
      assert.equal(res.status, 200);
    });
    await t.step("with appid null and no device or context", async () => {
      const res = await h.post({
        level: "info",
        projectId: "p",
        data: {},
        appid: null,
      });
      assert.equal(res.status, 200);
    });
  });
});

Deno.test("POST /api/v1/logs answers 415 for a media type or encoding it cannot read", async (t) => {
  await withHarness(async (h) => {
    const cases: [string, Record<string, string>][] = [
      ["no Content-Type", { "Content-Type": "" }],
      ["text/html", { "Content-Type": "text/html" }],
      ["form data", { "Content-Type": "application/x-www-form-urlencoded" }],
      ["a latin-1 charset", {
        "Content-Type": "application/json; charset=iso-8859-1",
      }],
      ["brotli", { "Content-Encoding": "br" }],
    ];
    for (const [name, headers] of cases) {
      await t.step(name, async () => {
        const res = name === "no Content-Type"
          ? await h.app.request("/api/v1/logs", {
            method: "POST",
            body: new Blob([JSON.stringify(randomEntry())]).stream(),
          })
          : await h.post(randomEntry(), headers);
        assert.equal((await errorOf(res, 415)).code, "unsupported_media_type");
      });
    }
  });
});

harnessTest(
  "POST /api/v1/logs accepts a gzip body and stores what it held",
  async (h) => {
    const project = await h.project();
    const body = await gzip(
      JSON.stringify(randomEntry({ projectId: project.id })),
    );
    const res = await h.app.request("/api/v1/logs", {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
        Origin: ORIGIN,
      },
      body: body as BodyInit,
    });
    assert.equal(res.status, 200);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
  },
);

Deno.test("POST /api/v1/logs answers 413 past the body limit", async (t) => {
  await withHarness(async (h) => {
    const big = JSON.stringify(
      randomEntry({ data: { blob: "x".repeat(5000) } }),
    );
    const bytes = new TextEncoder().encode(big);
    // A Request built in process carries no Content-Length: that framing,
    // and bodies arriving in pieces, are tested on a real server in
    // tests/routes/body_test.ts.
    const request = (body: BodyInit) =>
      new Request("http://localhost/api/v1/logs", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body,
      });
    await t.step("a whole body, without Content-Length", async () => {
      const req = request(big);
      assert.equal(req.headers.get("content-length"), null);
      const res = await h.app.request(req);
      const error = await errorOf(res, 413);
      assert.equal(error.code, "payload_too_large");
      assert.match(error.message, /4096 bytes/);
    });
    await t.step("a stream, without Content-Length", async () => {
      const req = request(chunked(bytes));
      assert.equal(req.headers.get("content-length"), null);
      const res = await h.app.request(req);
      assert.equal((await errorOf(res, 413)).code, "payload_too_large");
    });
    await t.step("gzip whose decompressed size is over the limit", async () => {
      const compressed = await gzip(big);
      assert.ok(compressed.length < 4096);
      const res = await h.app.request("/api/v1/logs", {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "Content-Encoding": "gzip",
        },
        body: chunked(compressed),
      });
      assert.equal(res.status, 413);
    });
    await t.step(
      "gzip whose compressed size alone is over the limit",
      async () => {
        // Random bytes do not compress: 4090 of them take more than 4096 gzipped.
        const noise = await gzip(crypto.getRandomValues(new Uint8Array(4090)));
        assert.ok(noise.length > 4096);
        const res = await h.app.request("/api/v1/logs", {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
          },
          body: chunked(noise),
        });
        assert.equal(res.status, 413);
      },
    );
    await t.step("a body exactly at the limit is accepted", async () => {
      const entry = randomEntry({ data: { blob: "" } });
      const pad = 4096 - new TextEncoder().encode(JSON.stringify(entry)).length;
      (entry.data as Record<string, string>).blob = "y".repeat(pad);
      const text = JSON.stringify(entry);
      assert.equal(new TextEncoder().encode(text).length, 4096);
      assert.equal((await h.post(text)).status, 200);
    });
  }, { config: { maxBodyBytes: 4096 } });
});

Deno.test("POST /api/v1/logs answers 400 invalid_json for a body that is not a JSON object", async (t) => {
  await withHarness(async (h) => {
    const cases: [string, string | Uint8Array][] = [
      ["empty", ""],
      ["not JSON", "level=info"],
      ["truncated", '{"level":"info"'],
      ["an array", "[]"],
      ["a string", '"info"'],
      ["null", "null"],
      [
        "invalid UTF-8",
        new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
      ],
      [
        "a repeated member",
        '{"level":"info","projectId":"p","data":{},"level":"error"}',
      ],
      [
        "a repeated member spelled with an escape",
        '{"level":"info","projectId":"p","data":{},"\\u006cevel":"error"}',
      ],
      ["invalid gzip", "not gzip"],
    ];
    for (const [name, body] of cases) {
      await t.step(name, async () => {
        const res = await h.app.request("/api/v1/logs", {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            ...(name === "invalid gzip" ? { "Content-Encoding": "gzip" } : {}),
          },
          body: body as BodyInit,
        });
        const error = await errorOf(res, 400);
        assert.equal(error.code, "invalid_json");
        assert.equal(error.issues, undefined);
      });
    }
  });
});

Deno.test("POST /api/v1/logs answers 400 invalid_body listing every failing path", async (t) => {
  await withHarness(async (h) => {
    const cases: [string, Record<string, unknown>, string[]][] = [
      ["level missing", { level: undefined }, ["level"]],
      ["level in capitals", { level: "INFO" }, ["level"]],
      ["level too long", { level: "a".repeat(33) }, ["level"]],
      ["level not a string", { level: 3 }, ["level"]],
      ["projectId missing", { projectId: undefined }, ["projectId"]],
      ["projectId empty", { projectId: "" }, ["projectId"]],
      ["projectId too long", { projectId: "p".repeat(129) }, ["projectId"]],
      ["data missing", { data: undefined }, ["data"]],
      ["data an array", { data: [1] }, ["data"]],
      ["data a string", { data: "hello" }, ["data"]],
      ["context an array", { context: [] }, ["context"]],
      ["context null", { context: null }, ["context"]],
      ["device a number", { device: 7 }, ["device"]],
      ["appid a number", { appid: 7 }, ["appid"]],
      ["appid too long", { appid: "a".repeat(257) }, ["appid"]],
      ["three fields at once", { level: "x y", projectId: 1, data: null }, [
        "level",
        "projectId",
        "data",
      ]],
    ];
    for (const [name, overrides, paths] of cases) {
      await t.step(name, async () => {
        const res = await h.post(randomEntry(overrides));
        const error = await errorOf(res, 400);
        assert.equal(error.code, "invalid_body");
        assert.deepEqual(
          error.issues!.map((i) => i.path).sort(),
          [...paths].sort(),
        );
        for (const issue of error.issues!) assert.ok(issue.message.length > 0);
      });
    }
    await t.step("nesting deeper than 32 levels", async () => {
      let deep: unknown = {};
      for (let i = 0; i < 31; i++) deep = { d: deep };
      // data at depth 2 holding 31 more levels: 33 in all.
      const res = await h.post(randomEntry({ data: deep }));
      const error = await errorOf(res, 400);
      assert.equal(error.code, "invalid_body");
      assert.deepEqual(error.issues!.map((i) => i.path), ["data"]);
    });
    await t.step("nesting of exactly 32 levels is accepted", async () => {
      let deep: unknown = {};
      for (let i = 0; i < 30; i++) deep = { d: deep };
      assert.equal((await h.post(randomEntry({ data: deep }))).status, 200);
    });
  });
});

harnessTest(
  "unknown top-level members are accepted but not stored",
  async (h) => {
    const project = await h.project();
    const res = await h.post(
      randomEntry({
        projectId: project.id,
        extra: "dropped",
        appid: "com.example.app.ios",
      }),
    );
    assert.equal(res.status, 200);
    await h.process();
    const [log] = await h.logs(project.id);
    assert.ok(log);
    assert.equal("extra" in log, false);
    assert.equal(log.appid, "com.example.app.ios");
  },
);

Deno.test("every answer of the endpoint carries CORS headers echoing Origin", async (t) => {
  await withHarness(async (h) => {
    const cases: [number, () => Promise<Response>][] = [
      [200, () => h.post(randomEntry(), { Origin: ORIGIN })],
      [400, () => h.post("{", { Origin: ORIGIN })],
      [
        413,
        () =>
          h.post(randomEntry({ data: { x: "x".repeat(2000) } }), {
            Origin: ORIGIN,
          }),
      ],
      [
        415,
        () =>
          h.post(randomEntry(), {
            Origin: ORIGIN,
            "Content-Type": "text/html",
          }),
      ],
      [
        405,
        async () =>
          await h.app.request("/api/v1/logs", { headers: { Origin: ORIGIN } }),
      ],
    ];
    for (const [status, send] of cases) {
      await t.step(`on ${status}`, async () => {
        const res = await send();
        assert.equal(res.status, status);
        assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
        assert.equal(res.headers.get("vary"), "Origin");
        const exposed = res.headers.get("access-control-expose-headers") ?? "";
        assertNamesAll(exposed, "exposed", [
          "Retry-After",
          "RateLimit-Limit",
          "RateLimit-Remaining",
          "RateLimit-Reset",
        ]);
        await res.body?.cancel();
      });
    }
  }, { config: { maxBodyBytes: 1024 } });
});

harnessTest(
  "OPTIONS /api/v1/logs answers the preflight with 204",
  async (h) => {
    const res = await preflight(
      h.app,
      ORIGIN,
      "content-type, signature, timestamp",
    );
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-origin"), ORIGIN);
    assert.match(res.headers.get("access-control-allow-methods")!, /POST/);
    const allowed = res.headers.get("access-control-allow-headers")!
      .toLowerCase();
    assertNamesAll(allowed, "allowed", [
      "content-type",
      "content-encoding",
      "timestamp",
      "signature",
    ]);
    assert.ok(Number(res.headers.get("access-control-max-age")) >= 3600);
  },
);

Deno.test("other methods on the endpoint answer 405 and other paths 404", async (t) => {
  await withHarness(async (h) => {
    for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
      await t.step(`${method} /api/v1/logs`, async () => {
        const res = await h.app.request("/api/v1/logs", { method });
        assert.equal(res.headers.get("allow"), "POST, OPTIONS");
        assert.equal((await errorOf(res, 405)).code, "method_not_allowed");
      });
    }
    for (
      const path of ["/", "/api/v1/log", "/api/v2/logs", "/api/v1/logs/batch"]
    ) {
      await t.step(`POST ${path}`, async () => {
        const res = await h.app.request(path, { method: "POST", body: "{}" });
        assert.equal((await errorOf(res, 404)).code, "not_found");
      });
    }
  });
});

harnessTest(
  "the answer does not depend on whether the project or credentials exist",
  async (h) => {
    const project = await h.project();
    const real = await h.post(randomEntry({ projectId: project.id }), {
      Origin: ORIGIN,
    });
    const fake = await h.post(randomEntry({ projectId: "nope" }), {
      Origin: "https://evil.example",
    });
    assert.equal(real.status, fake.status);
    assert.deepEqual([...real.headers.keys()], [...fake.headers.keys()]);
    assert.equal(await real.text(), await fake.text());
  },
);

harnessTest(
  "a signed entry at the 64 KiB body limit is queued and stored whole",
  async (h) => {
    const project = await h.project([]);
    const entry = randomEntry({ projectId: project.id, data: { blob: "" } });
    const pad = 65536 - new TextEncoder().encode(JSON.stringify(entry)).length;
    (entry.data as Record<string, string>).blob = "z".repeat(pad);
    const headers = signEntry(project.secret, entry, h.clock.now());
    const res = await h.post(entry, headers);
    assert.equal(res.status, 200);
    await h.process();
    const [log] = await h.logs(project.id);
    assert.equal(log?.auth, "signature");
    assert.equal((log.data.blob as string).length, pad);
  },
);
