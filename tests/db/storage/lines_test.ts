/**
 * The stored line cut from a queued entry's JSON (db/storage/lines.ts,
 * `lineFromQueued`): for every entry the route builds, the cut line is byte
 * for byte the line the record encodes to, whatever the data holds; entries
 * whose line cannot be cut (no `device` or `context`) are left to the
 * encoder.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  decodeLineMembers,
  decodeRecordLine,
  encodeRecordLine,
  idBefore,
  lineFromQueued,
  lineId,
} from "../../../db/storage/lines.ts";
import { type QueuedEntry, toLogRecord } from "../../../domain/entry.ts";
import type { GroupCommitter } from "../../../queue/producer.ts";
import { logsRoute } from "../../../routes/logs.ts";
import { randomEntry, signEntry } from "../../_helpers/harness.ts";

/** The entries the route submits for `bodies`, as the producer gets them. */
async function routed(
  bodies: { body: Record<string, unknown>; headers: Record<string, string> }[],
): Promise<QueuedEntry[]> {
  const submitted: QueuedEntry[] = [];
  const producer = {
    submit(entry: QueuedEntry) {
      submitted.push(entry);
      return Promise.resolve();
    },
  } as unknown as GroupCommitter;
  const app = logsRoute({ producer, maxBodyBytes: 65_536 });
  for (const { body, headers } of bodies) {
    const res = await app.request("/", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.text());
  }
  return submitted;
}

const ORIGIN = { Origin: "https://app.example.com" };

Deno.test("the line cut from a routed entry's JSON is the line its record encodes to", async () => {
  const tricky = {
    receivedAt: 1,
    text: ',"receivedAt":1,"projectId":"p"}',
    quote: '"\\',
    nested: { projectId: "x", receivedAt: 2, list: [{ receivedAt: 3 }] },
    unicode: "é \u2028 😀",
  };
  const signed = randomEntry({ projectId: "p1", data: tricky });
  const entries = await routed([
    { body: randomEntry({ projectId: "p1" }), headers: ORIGIN },
    { body: randomEntry({ projectId: "p1", data: tricky }), headers: ORIGIN },
    {
      body: randomEntry({ device: "server-1", appid: "com.a.b" }),
      headers: {},
    },
    {
      body: signed,
      headers: signEntry("secret", signed, Date.UTC(2026, 0, 1)),
    },
    { body: randomEntry({ appid: null }), headers: ORIGIN },
  ]);
  assert.equal(entries.length, 5);
  for (const entry of entries) {
    for (const auth of ["origin", "appid", "signature"] as const) {
      const line = lineFromQueued(JSON.stringify(entry), entry, auth);
      assert.equal(line, encodeRecordLine(toLogRecord(entry, auth)));
    }
  }
});

Deno.test("an entry without device or context is left to the encoder", async () => {
  const [noDevice, noContext] = await routed([
    { body: { ...randomEntry(), device: undefined }, headers: ORIGIN },
    { body: { ...randomEntry(), context: undefined }, headers: ORIGIN },
  ]);
  for (const entry of [noDevice!, noContext!]) {
    assert.equal(
      lineFromQueued(JSON.stringify(entry), entry, "origin"),
      undefined,
    );
  }
});

Deno.test("an entry whose members come in another order is left to the encoder", () => {
  const entry: QueuedEntry = {
    id: "0000000000000000000001",
    receivedAt: 0,
    level: "info",
    projectId: "p",
    data: {},
    device: {},
    context: {},
  };
  assert.equal(
    lineFromQueued(JSON.stringify(entry), entry, "origin"),
    undefined,
  );
});

Deno.test("an entry received at another time than its id says is left to the encoder", () => {
  const entry: QueuedEntry = {
    id: "0000000003e8" + "0".repeat(16), // 1000 ms
    level: "info",
    data: {},
    device: {},
    context: {},
    receivedAt: 2000,
    projectId: "p",
  };
  const text = JSON.stringify(entry);
  assert.equal(lineFromQueued(text, entry, "origin"), undefined);
  // The encoder keeps the time the id does not say.
  assert.match(
    encodeRecordLine(toLogRecord(entry, "origin")),
    /"receivedAt":2000/,
  );
});

Deno.test("a line read member by member gives the members asked for as the whole line does, others left out", () => {
  const record = toLogRecord(
    {
      ...randomEntry({ projectId: "p" }),
      id: "0000000000000000000001",
      receivedAt: 1_700_000_000_000,
      data: {
        title: 'quote " and \\ backslash, {braces} [brackets]',
        nested: { a: [1, { b: "}" }], c: null, d: true, e: -1.5e3 },
      },
      context: { service: "api", "odd,key": '"x"' },
      origin: "https://app.example.com",
    } as unknown as QueuedEntry,
    "origin",
  );
  const line = encodeRecordLine(record);
  const whole = decodeRecordLine(line);
  for (
    const roots of [
      ["context"],
      ["data"],
      ["device", "origin"],
      ["auth", "context", "data", "device", "origin"],
    ]
  ) {
    const part = decodeLineMembers(line, new Set(roots));
    assert.equal(part.id, whole.id);
    assert.equal(part.level, whole.level);
    assert.equal(part.receivedAt, whole.receivedAt);
    for (const root of ["data", "device", "context", "auth", "origin"]) {
      const key = root as keyof typeof whole;
      assert.deepEqual(
        part[key],
        roots.includes(root) ? whole[key] : undefined,
        `${root} of ${roots}`,
      );
    }
  }
});

Deno.test("idBefore orders lines as their ids sort, without making the ids", () => {
  const line = (id: string) => `{"id":"${id}","level":"info","data":{}}`;
  const ids = ["0193a", "0193b", "0193", "0193a0", "0", "f", "0193a"];
  for (const a of ids) {
    for (const b of ids) {
      assert.equal(idBefore(line(a), line(b)), a < b, `${a} < ${b}`);
      assert.equal(
        idBefore(line(a), line(b)),
        lineId(line(a)) < lineId(line(b)),
      );
    }
  }
});
