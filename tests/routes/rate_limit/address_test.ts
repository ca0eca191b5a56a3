/**
 * The limiter's bucket keys (routes/rate_limit/address.ts): an IPv4 address
 * is kept as its number, everything else as text, and both forms meet in
 * one bucket and in one counter in KV.
 */
import assert from "node:assert/strict";
import { rateLimitsPrefix } from "../../../db/keys.ts";
import {
  bucketKey,
  bucketText,
  clientBucket,
  ipv4Number,
} from "../../../routes/rate_limit/address.ts";
import { RateLimiter } from "../../../routes/rate_limit/mod.ts";
import { fakeClock } from "../../_helpers/harness.ts";
import { withLimiterKv } from "../../_helpers/rate_limit.ts";

Deno.test("ipv4Number reads four decimal octets and refuses anything else", () => {
  assert.equal(ipv4Number("0.0.0.0"), 0);
  assert.equal(ipv4Number("10.0.0.1"), 167772161);
  assert.equal(ipv4Number("255.255.255.255"), 4294967295);
  assert.equal(ipv4Number("198.51.100.7"), 3325256711);
  for (
    const text of [
      "",
      "1.2.3",
      "1.2.3.4.5",
      "256.1.1.1",
      "1.2.3.1000",
      "01.2.3.4",
      "1.2.3.04",
      "1..2.3",
      ".1.2.3",
      "1.2.3.",
      " 1.2.3.4",
      "1.2.3.4 ",
      "1.2.3.a",
      "::1",
      "::ffff:1.2.3.4",
    ]
  ) {
    assert.equal(ipv4Number(text), -1, text);
  }
});

Deno.test("a bucket key turns back into the address it was made from", () => {
  for (const text of ["0.0.0.0", "10.0.0.1", "255.255.255.255", "1.2.3.4"]) {
    const key = bucketKey(text);
    assert.equal(typeof key, "number", text);
    assert.equal(bucketText(key), text);
  }
  assert.equal(bucketKey("2001:db8:0:0::/64"), "2001:db8:0:0::/64");
  assert.equal(bucketText("2001:db8:0:0::/64"), "2001:db8:0:0::/64");
});

Deno.test("a peer, a forwarded address and a mapped IPv6 address of one IPv4 client share a bucket", () => {
  const req = (xff?: string) =>
    new Request(
      "http://x/",
      xff ? { headers: { "X-Forwarded-For": xff } } : {},
    );
  const peer = (hostname: string) => ({
    remoteAddr: { transport: "tcp" as const, hostname, port: 1 },
  });
  const expected = bucketKey("198.51.100.1");
  assert.equal(clientBucket(req(), peer("198.51.100.1"), 0), expected);
  assert.equal(
    clientBucket(req("198.51.100.1"), peer("10.0.0.1"), 1),
    expected,
  );
  assert.equal(clientBucket(req(), peer("::ffff:198.51.100.1"), 0), expected);
  assert.equal(
    clientBucket(req(), peer("2001:db8::1"), 0),
    "2001:db8:0:0::/64",
  );
});

Deno.test("take() by text and admit() by header draw on the same bucket", () => {
  const limiter = new RateLimiter({
    rps: 20,
    burst: 50,
    trustProxy: 1,
    now: fakeClock().now,
  });
  const req = new Request("http://x/", {
    headers: { "X-Forwarded-For": "198.51.100.1" },
  });
  for (let i = 0; i < 49; i++) assert.equal(limiter.take("198.51.100.1"), 0);
  limiter.admit(req, {});
  assert.throws(() => limiter.admit(req, {}), { status: 429 });
});

Deno.test("the counter of an IPv4 address is kept in KV under its dotted text", async () => {
  await withLimiterKv({ trustProxy: 1 }, async ({ kv, limiter, pipeline }) => {
    const req = new Request("http://x/", {
      headers: { "X-Forwarded-For": "198.51.100.1" },
    });
    limiter.admit(req, {});
    limiter.admit(req, {});
    await pipeline.producer.flush();
    const keys = [];
    for await (const e of kv.list({ prefix: rateLimitsPrefix() })) {
      keys.push(e.key.at(-1));
    }
    assert.deepEqual(keys, ["198.51.100.1"]);
  });
});
