/**
 * Server clients, end to end: signatures computed in the test the way clients
 * compute them (a JavaScript client with `signEntry`, and a client whose JSON
 * writer escapes non-ASCII, writes `1.0` and pretty-prints), sent through the
 * endpoint, then judged by the consumer. Covers the mismatches of the
 * signature rules (case, timestamp, secret, member order, whitespace), the
 * skew window measured at receipt, replays and secret rotation.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kvWith } from "../_helpers/kv_with.ts";
import { sign } from "../../auth/signature.ts";
import { rotateSecret } from "../../db/projects.ts";
import { CLAIM_MARGIN_MS } from "../../queue/claims.ts";
import {
  assertCounts,
  assertOnlyRejected,
  assertStoredOnce,
  type Harness,
  harnessTest,
  otherConsumer,
  pendingBatches,
  postEntries,
  postQueued,
  projectTest,
  randomEntry,
  recentRejections,
  signedEntry,
  signedMembers,
  signEntry,
  untilIdle,
  withHarness,
} from "../_helpers/harness.ts";

/** Headers carrying `signature` over `params` as given, and `timestamp`. */
function signedHeaders(
  secret: string,
  projectId: string,
  params: string,
  timestamp: number | string,
): { timestamp: string; signature: string } {
  return {
    timestamp: String(timestamp),
    signature: sign(secret, `${projectId}${params}${timestamp}`),
  };
}

/** A number the client's JSON writer prints as a double (`1.0`). */
class Double {
  constructor(readonly value: number) {}
}

/**
 * The JSON writer of a non-JavaScript client (Java's or Python's defaults):
 * non-ASCII characters escaped as `\u00e9`, doubles written with a decimal
 * point, and pretty-printed with `indent` when given.
 */
function clientJson(value: unknown, indent?: string, depth = 0): string {
  if (value instanceof Double) {
    return Number.isInteger(value.value)
      ? value.value.toFixed(1)
      : String(value.value);
  }
  if (typeof value === "string") {
    return JSON.stringify(value).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
  }
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const open = indent === undefined ? "" : "\n" + indent.repeat(depth + 1);
  const close = indent === undefined ? "" : "\n" + indent.repeat(depth);
  const colon = indent === undefined ? ":" : ": ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const items = value.map((v) => open + clientJson(v, indent, depth + 1));
    return `[${items.join(",")}${close}]`;
  }
  const members = Object.entries(value);
  if (members.length === 0) return "{}";
  const items = members.map(([k, v]) =>
    open + clientJson(k) + colon + clientJson(v, indent, depth + 1)
  );
  return `{${items.join(",")}${close}}`;
}

projectTest(
  "a signature computed like a JavaScript client verifies and is stored with auth signature",
  async (h, project) => {
    const body = randomEntry({
      projectId: project.id,
      data: { title: "Commande créée", message: "Prix: 12€", ratio: 0.5 },
    });
    await postQueued(h, body, signEntry(project.secret, body, h.clock.now()));
    const log = await assertStoredOnce(h, project.id, "signature");
    assert.deepEqual(log.data, body.data);
  },
);

Deno.test("a signature from a client whose JSON writer escapes non-ASCII, writes 1.0 and pretty-prints the body verifies", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project([]);
    const client = (doc: Record<string, unknown>, signed = doc) => {
      const params = clientJson(signed);
      // The case is only meaningful if JavaScript would write other text.
      assert.notEqual(params, JSON.stringify(JSON.parse(params)));
      return {
        text: clientJson(doc, "  "),
        headers: signedHeaders(
          project.secret,
          project.id,
          params,
          h.clock.now(),
        ),
      };
    };

    await t.step("with every signed member present", async () => {
      const { text, headers } = client({
        level: "warning",
        projectId: project.id,
        device: { type: "server", os: "Linux", screen: null },
        context: { service: "café-api", environment: "production" },
        data: {
          title: "Commande créée",
          message: "Prix: 12€ — ok",
          amount: new Double(1),
          ratio: new Double(0.25),
          tags: ["é", new Double(2)],
        },
      });
      assert.match(text, /\\u00e9/);
      assert.match(text, /\n {2}"level": "warning"/);
      await postQueued(h, text, headers);
    });

    await t.step(
      "with device and context left out of the body and of params",
      async () => {
        const { text, headers } = client({
          level: "error",
          projectId: project.id,
          data: { title: "Échec", count: new Double(3) },
        });
        await postQueued(h, text, headers);
      },
    );

    await t.step(
      "with the body's members in another order than the signed one",
      async () => {
        const signed = {
          level: "info",
          projectId: project.id,
          device: {},
          context: { requestId: "r-1" },
          data: { title: "Reçu", amount: new Double(10) },
        };
        const { data, context, level, projectId, device } = signed;
        const { text, headers } = client(
          { data, context, level, projectId, device },
          signed,
        );
        await postQueued(h, text, headers);
      },
    );

    await h.process();
    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => l.auth), [
      "signature",
      "signature",
      "signature",
    ]);
    assert.equal(logs[0]!.data.title, "Commande créée");
    assert.equal(logs[0]!.data.amount, 1);
    assert.deepEqual(logs[0]!.context, {
      service: "café-api",
      environment: "production",
    });
    assert.deepEqual(logs[1]!.device, {});
    await assertCounts(h, project.id, 3, {});
  });
});

Deno.test("an entry without device or context verifies when the client leaves them out of params or signs them as {}", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project([]);
    const variants: [string, Record<string, unknown>][] = [
      ["both left out", {}],
      ["both as {}", { device: {}, context: {} }],
      ["device left out, context as {}", { context: {} }],
      ["device as {}, context left out", { device: {} }],
    ];
    for (const [name, signedAs] of variants) {
      await t.step(name, async () => {
        const body = {
          level: "info",
          projectId: project.id,
          data: { title: name },
        };
        await postQueued(
          h,
          body,
          signEntry(project.secret, { ...body, ...signedAs }, h.clock.now()),
        );
      });
    }
    await h.process();
    const logs = await h.logs(project.id);
    assert.deepEqual(
      logs.map((l) => l.data.title),
      variants.map(([name]) => name),
    );
    assert.ok(logs.every((l) => l.auth === "signature"));
    await assertCounts(h, project.id, variants.length, {});
  });
});

harnessTest(
  "an entry that sends device or context does not verify with it left out of params",
  async (h) => {
    const project = await h.project([]);
    const body = randomEntry({ projectId: project.id });
    const { device: _, ...withoutDevice } = body;
    await postQueued(
      h,
      body,
      signEntry(project.secret, withoutDevice, h.clock.now()),
    );
    await h.process();
    await assertOnlyRejected(h, project.id, { bad_signature: 1 });
  },
);

Deno.test("a signature that does not match is dropped as bad_signature", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project([]);
    const cases: [
      string,
      (body: Record<string, unknown>) => {
        timestamp: string;
        signature: string;
      },
    ][] = [
      ["a signature in lowercase hex", (body) => {
        const headers = signEntry(project.secret, body, h.clock.now());
        return { ...headers, signature: headers.signature.toLowerCase() };
      }],
      ["params with extra whitespace", (body) => {
        const params = JSON.stringify(signedMembers(body), null, 1);
        return signedHeaders(project.secret, project.id, params, h.clock.now());
      }],
      ["params with a space after each colon and comma", (body) => {
        const params = JSON.stringify(signedMembers(body))
          .replaceAll('":', '": ').replaceAll(',"', ', "');
        return signedHeaders(project.secret, project.id, params, h.clock.now());
      }],
      ["params in the wrong member order", (body) => {
        const { level, projectId, device, context, data } = body;
        const params = JSON.stringify({
          projectId,
          level,
          device,
          context,
          data,
        });
        return signedHeaders(project.secret, project.id, params, h.clock.now());
      }],
      [
        "a signature made with a wrong secret",
        (body) => signEntry(`${project.secret}x`, body, h.clock.now()),
      ],
      [
        "a signature over another body",
        (body) =>
          signEntry(project.secret, { ...body, level: "error" }, h.clock.now()),
      ],
      ["a signature with no timestamp header", (body) => {
        const { signature } = signEntry(project.secret, body, h.clock.now());
        return { signature } as { timestamp: string; signature: string };
      }],
    ];
    for (const [name, headersFor] of cases) {
      await t.step(name, async () => {
        const body = randomEntry({ projectId: project.id });
        await postQueued(h, body, headersFor(body));
      });
    }
    await h.process();
    await assertOnlyRejected(h, project.id, { bad_signature: cases.length });
    assert.ok(
      (await recentRejections(h.kv, project.id)).every((r) =>
        r.reason === "bad_signature"
      ),
    );
  });
});

Deno.test("a non-integer timestamp is dropped as bad_signature even when it was signed", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project([]);
    const timestamps = [
      `${h.clock.now()}.5`,
      `${h.clock.now()}.0`,
      "1.7672256e12",
      "",
    ];
    for (const timestamp of timestamps) {
      await t.step(`timestamp "${timestamp}"`, async () => {
        const body = randomEntry({ projectId: project.id });
        const params = JSON.stringify(signedMembers(body));
        await postQueued(
          h,
          body,
          signedHeaders(project.secret, project.id, params, timestamp),
        );
      });
    }
    await h.process();
    await assertOnlyRejected(h, project.id, {
      bad_signature: timestamps.length,
    });
  });
});

harnessTest(
  "signature skew is measured against receipt time, not processing time",
  async (h) => {
    const project = await h.project([]);
    await postEntries(h, project.id, { secret: project.secret });
    h.clock.advance(10 * 60_000);
    await assertStoredOnce(h, project.id, "signature");
  },
);

Deno.test("a timestamp further than SIGNATURE_MAX_SKEW_MS from receipt is dropped as stale_timestamp", async (t) => {
  await withHarness(async (h) => {
    const project = await h.project([]);
    const skew = h.config.signatureMaxSkewMs;
    const now = h.clock.now();
    const cases: [string, number, boolean][] = [
      ["exactly the skew in the past is accepted", now - skew, true],
      ["exactly the skew in the future is accepted", now + skew, true],
      ["1 ms older than the skew is stale", now - skew - 1, false],
      [
        "1 ms further in the future than the skew is stale",
        now + skew + 1,
        false,
      ],
      ["an hour old is stale", now - 3_600_000, false],
      [
        "in seconds instead of milliseconds is stale",
        Math.floor(now / 1000),
        false,
      ],
    ];
    for (const [name, timestamp] of cases) {
      await t.step(name, async () => {
        const body = randomEntry({
          projectId: project.id,
          data: { title: name },
        });
        await postQueued(h, body, signEntry(project.secret, body, timestamp));
      });
    }
    await h.process();
    const logs = await h.logs(project.id);
    assert.deepEqual(
      logs.map((l) => l.data.title),
      cases.filter(([, , ok]) => ok).map(([name]) => name),
    );
    await assertCounts(h, project.id, 2, { stale_timestamp: 4 });
    assert.deepEqual(
      (await recentRejections(h.kv, project.id)).map((r) => r.reason),
      [
        "stale_timestamp",
        "stale_timestamp",
        "stale_timestamp",
        "stale_timestamp",
      ],
    );
  });
});

harnessTest(
  "the same project and signature sent twice is stored once and the second is dropped as replayed",
  async (h) => {
    const { project, body, headers } = await signedEntry(h);
    await postQueued(h, body, headers);
    await h.process();
    h.clock.advance(1000);
    await postQueued(h, body, headers);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
    await assertCounts(h, project.id, 1, { replayed: 1 });
    const recent = await recentRejections(h.kv, project.id);
    assert.equal(recent.length, 1);
    assert.equal(recent[0]!.reason, "replayed");
    assert.equal(recent[0]!.at, h.clock.now());
  },
);

harnessTest(
  "the same signature twice within one batch is stored once and dropped once as replayed",
  async (h) => {
    const { project, body, headers } = await signedEntry(h);
    // The first request is committed alone; the two that wait meanwhile share
    // the next commit, hence one batch.
    await Promise.all([
      postEntries(h, project.id),
      postQueued(h, body, headers),
      postQueued(h, body, headers),
    ]);
    const counts = (await pendingBatches(h.kv)).map((b) => b.header.count);
    assert.deepEqual(counts, [1, 2]);
    await h.process();
    assert.equal((await h.logs(project.id)).length, 1);
    await assertCounts(h, project.id, 1, { no_credentials: 1, replayed: 1 });
  },
  // Without lingering, so that the first request's commit goes alone.
  { pipeline: { lingerMs: 0 } },
);

Deno.test("the same signature in two batches processed at once is stored once", async (t) => {
  const cases: [string, (h: Harness, ids: string[]) => Promise<unknown>][] = [
    ["by one worker", async (h, ids) => {
      h.pipeline.worker.push(ids);
      await untilIdle(h.pipeline.worker);
    }],
    ["by two processes", async (h, ids) => {
      const outcomes = await Promise.all([
        h.pipeline.consumer.process(ids[0]!),
        otherConsumer(h).process(ids[1]!),
      ]);
      assert.deepEqual(outcomes, ["processed", "processed"]);
    }],
  ];
  for (const [name, processBoth] of cases) {
    await t.step(name, async () => {
      await withHarness(async (h) => {
        const { project, body, headers } = await signedEntry(h);
        await postQueued(h, body, headers);
        await postQueued(h, body, headers);
        const ids = (await pendingBatches(h.kv)).map((b) => b.id);
        assert.equal(ids.length, 2);
        await processBoth(h, ids);
        assert.deepEqual(await pendingBatches(h.kv), []);
        assert.equal((await h.logs(project.id)).length, 1);
        await assertCounts(h, project.id, 1, { replayed: 1 });
      });
    });
  }
});

harnessTest(
  "after rotateSecret with a grace period, the previous secret verifies during the grace period and not after",
  async (h) => {
    const project = await h.project([]);
    const old = project.secret;
    const graceMs = 60_000;
    const rotated = await rotateSecret(h.kv, project.id, {
      graceMs,
      now: h.clock.now,
    });
    assert.notEqual(rotated.secret, old);
    const send = async (secret: string, title: string) => {
      const body = randomEntry({ projectId: project.id, data: { title } });
      await postQueued(h, body, signEntry(secret, body, h.clock.now()));
    };
    await send(old, "old secret at rotation");
    await send(rotated.secret, "new secret at rotation");
    h.clock.advance(graceMs - 1);
    await send(old, "old secret at the end of the grace period");
    // Judged by receipt time: processing after the grace changes nothing.
    h.clock.advance(1);
    await h.process();
    await send(old, "old secret after the grace period");
    await send(rotated.secret, "new secret after the grace period");
    h.clock.advance(86_400_000);
    await send(old, "old secret a day later");
    await send(rotated.secret, "new secret a day later");
    await h.process();
    const logs = await h.logs(project.id);
    assert.deepEqual(logs.map((l) => l.data.title), [
      "old secret at rotation",
      "new secret at rotation",
      "old secret at the end of the grace period",
      "new secret after the grace period",
      "new secret a day later",
    ]);
    await assertCounts(h, project.id, 5, { bad_signature: 2 });
  },
);

harnessTest(
  "after rotateSecret without a grace period, only the new secret verifies",
  async (h) => {
    const project = await h.project([]);
    const rotated = await rotateSecret(h.kv, project.id, {
      graceMs: 0,
      now: h.clock.now,
    });
    for (
      const [secret, title] of [[project.secret, "old"], [
        rotated.secret,
        "new",
      ]]
    ) {
      const body = randomEntry({ projectId: project.id, data: { title } });
      await postQueued(h, body, signEntry(secret!, body, h.clock.now()));
    }
    await h.process();
    assert.deepEqual((await h.logs(project.id)).map((l) => l.data.title), [
      "new",
    ]);
    await assertCounts(h, project.id, 1, { bad_signature: 1 });
  },
);

Deno.test("a signature is remembered twice the skew and 10 minutes more, so that a copy whose batch is retried late is still a replay", async () => {
  const raw = await Deno.openKv(":memory:");
  const kept: number[] = [];
  // Each claim's expiry, as it is set.
  const kv = kvWith(raw, {
    atomic: () => {
      const op = raw.atomic();
      const set = op.set.bind(op);
      op.set = (key, value, options) => {
        if (key[0] === "seen_signatures") kept.push(options?.expireIn ?? 0);
        return set(key, value, options);
      };
      return op;
    },
  });
  try {
    await withHarness(async (h) => {
      const { body, headers } = await signedEntry(h);
      await postQueued(h, body, headers);
      await h.process();
    }, { kv, config: { signatureMaxSkewMs: 60_000 } });
    assert.deepEqual(kept, [2 * 60_000 + CLAIM_MARGIN_MS]);
    assert.equal(CLAIM_MARGIN_MS, 10 * 60_000);
  } finally {
    raw.close();
  }
});
