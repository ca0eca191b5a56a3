/**
 * The route hands the producer the entry's JSON cut from the body's own text
 * when that text is already what `JSON.stringify` writes, and leaves it to
 * the producer otherwise: either way, what is queued is
 * `JSON.stringify(entry)` to the byte.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createApp } from "../../app.ts";
import type { QueuedEntry } from "../../domain/entry.ts";
import type { GroupCommitter } from "../../queue/producer.ts";
import { ORIGIN, postBody } from "../_helpers/harness.ts";

/** An app whose producer records what each request handed it. */
function recordingApp() {
  const handed: { entry: QueuedEntry; json: string | undefined }[] = [];
  const app = createApp({
    producer: {
      submit: (entry: QueuedEntry, json?: string) => {
        handed.push({ entry, json });
        return Promise.resolve();
      },
    } as unknown as GroupCommitter,
    maxBodyBytes: 65536,
  });
  return { app, handed };
}

/** POSTs `body` and returns what the producer was handed. */
async function handedFor(body: string, headers: Record<string, string> = {}) {
  const { app, handed } = recordingApp();
  const res = await postBody(app, body, { Origin: ORIGIN, ...headers });
  assert.equal(res.status, 200, await res.text());
  assert.equal(handed.length, 1);
  return handed[0]!;
}

Deno.test("a compact body's members are handed on as sent, equal to JSON.stringify of the entry", async () => {
  const bodies = [
    `{"level":"info","projectId":"p1","data":{"message":"hi there","n":12,"f":0.5,"ok":true,"no":null,"list":[1,"a",{"b":[]}]}}`,
    `{"data":{"é":"ünïcode ✓ 😀"},"projectId":"p1","level":"error","device":"phone","context":{"route":"/x"},"appid":"web"}`,
    `{"level":"warning","projectId":"p1","data":{},"device":{"w":1920},"context":{},"appid":null,"extra":[1]}`,
  ];
  for (const body of bodies) {
    const { entry, json } = await handedFor(body);
    assert.notEqual(json, undefined, body);
    assert.equal(json, JSON.stringify(entry), body);
  }
});

Deno.test("a body that JSON.stringify would write otherwise is left to the producer", async () => {
  const data = [
    `{ "a": 1 }`, // whitespace
    `{"a":"tab\\tand \\u00e9"}`, // escapes
    `{"a":1.0}`, // a number written otherwise
    `{"a":-0}`,
    `{"a":1e2}`,
    `{"b":1,"1":2}`, // an array-index name, which moves first
  ];
  for (const d of data) {
    const { entry, json } = await handedFor(
      `{"level":"info","projectId":"p1","data":${d}}`,
    );
    assert.equal(json, undefined, d);
    assert.equal(entry.level, "info");
  }
  // Whitespace between top-level members.
  assert.equal(
    (await handedFor(`{"level": "info","projectId":"p1","data":{}}`)).json,
    undefined,
  );
});
