/**
 * The sign-in limit: wrong passwords counted per IPv6 /64 and per IPv4
 * address, a ceiling for all addresses together, and a table of addresses
 * bounded in entries whatever a client claims in `X-Forwarded-For`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { addressBucket, LoginLimiter } from "../../dashboard/security.ts";
import { fakeClock } from "../_helpers/harness.ts";
import { submitAs } from "../_helpers/dashboard_accounts.ts";
import type { DashApp } from "../../dashboard/routes/common.ts";
import {
  dashboardTest,
  PASSWORD,
  textOf,
  withDashboard,
} from "../_helpers/dashboard.ts";
import { assertEachGives } from "../_helpers/table.ts";

/** Submits the administrator's sign-in with `password` from `hostname`. */
function signInFrom(
  app: DashApp,
  password: string,
  hostname: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const peer = {
    remoteAddr: { transport: "tcp" as const, hostname, port: 40000 },
  };
  return submitAs(app, "admin", password, peer, headers);
}

/**
 * Makes `count` sign-in attempts, the i-th (from 1) by `attempt`: their
 * statuses, and the text of the last answer.
 */
async function attempts(
  count: number,
  attempt: (i: number) => Promise<Response>,
): Promise<{ statuses: number[]; last: string }> {
  const statuses: number[] = [];
  let last = "";
  for (let i = 1; i <= count; i++) {
    const res = await attempt(i);
    statuses.push(res.status);
    if (i === count) last = await res.text();
    else await res.body?.cancel();
  }
  return { statuses, last };
}

Deno.test("an address counts as its IPv6 /64, or as itself for IPv4", () => {
  assertEachGives(addressBucket, [
    ["2001:db8:1:2::99", "2001:db8:1:2::/64"],
    ["2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"],
    ["[2001:db8:1:2:ffff::1]", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
    ["198.51.100.7", "198.51.100.7"],
  ]);
});

dashboardTest(
  "60 wrong passwords from 60 addresses of one IPv6 /64 are refused after the fifth",
  async (h) => {
    const { statuses } = await attempts(60, (i) =>
      signInFrom(
        h.dash,
        `guess ${i}`,
        `2001:db8:77:1:${i.toString(16)}::${i.toString(16)}`,
      ));
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
    assert.ok(statuses.slice(5).every((s) => s === 429), String(statuses));
    const neighbour = await signInFrom(h.dash, PASSWORD, "2001:db8:77:2::1");
    assert.equal(neighbour.status, 303, "the next /64 is counted apart");
  },
);

dashboardTest(
  "IPv4 addresses are counted one by one, and all addresses together have a ceiling",
  async (h) => {
    const { statuses, last } = await attempts(
      70,
      (i) => signInFrom(h.dash, `guess ${i}`, `198.51.100.${i}`),
    );
    assert.match(textOf(last), /Too many attempts/);
    assert.ok(statuses.slice(0, 60).every((s) => s === 401), String(statuses));
    assert.ok(statuses.slice(60).every((s) => s === 429), String(statuses));
    h.clock.advance(10_000);
    const later = await signInFrom(h.dash, PASSWORD, "203.0.113.9");
    assert.equal(later.status, 303, "the ceiling refills");
  },
);

Deno.test("X-Forwarded-For from a trusted proxy is counted per /64 too", async () => {
  await withDashboard(async (h) => {
    const { statuses } = await attempts(
      8,
      (i) =>
        signInFrom(h.dash, `guess ${i}`, "10.0.0.1", {
          "x-forwarded-for": `2001:db8:5:5::${i}`,
        }),
    );
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
  }, { dashboard: { trustProxy: 1 } });
});

Deno.test("the sign-in table stays bounded in entries under a flood of addresses", () => {
  const clock = fakeClock();
  const limiter = new LoginLimiter({ now: clock.now, maxAddresses: 1000 });
  const before = Deno.memoryUsage().heapUsed;
  let admitted = 0;
  for (let i = 0; i < 50_000; i++) {
    const random = crypto.getRandomValues(new Uint16Array(8));
    const address = Array.from(random, (n) => n.toString(16)).join(":");
    if (limiter.take(address) === 0) admitted++;
    clock.advance(1000); // the ceiling refills: every attempt is admitted
  }
  assert.equal(admitted, 50_000);
  assert.equal(limiter.size, 1000);
  const grown = Deno.memoryUsage().heapUsed - before;
  assert.ok(grown < 32 * 1024 * 1024, `heap grew ${grown} bytes`);
});
