/**
 * The sign-in limit: wrong passwords counted per IPv6 /64 and per IPv4
 * address, per network (an IPv4 /24, an IPv6 /48), and those that cost a
 * hash under a ceiling for all networks together, shared out by turns so
 * that guessers spread over many networks lock out neither the
 * administrator nor an account; a request without the form's token takes
 * no attempt; and tables of addresses and networks bounded in entries
 * whatever a client claims in `X-Forwarded-For`.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  addressBucket,
  LoginLimiter,
  networkBucket,
} from "../../dashboard/security.ts";
import { scryptSync } from "node:crypto";
import { fakeClock } from "../_helpers/harness.ts";
import {
  ACCOUNT_PASSWORD,
  addAccount,
  submitAs,
} from "../_helpers/dashboard_accounts.ts";
import { getUser } from "../../db/users.ts";
import { userKey } from "../../db/keys.ts";
import { encodeJson } from "../../db/kv.ts";
import type { DashApp } from "../../dashboard/routes/common.ts";
import {
  dashboardTest,
  type DashHarness,
  PASSWORD,
  textOf,
  withDashboard,
} from "../_helpers/dashboard.ts";
import { assertEachGives } from "../_helpers/table.ts";

/** The peer of a request from `hostname`. */
function peerOf(hostname: string) {
  return { remoteAddr: { transport: "tcp" as const, hostname, port: 40000 } };
}

/** Submits the administrator's sign-in with `password` from `hostname`. */
function signInFrom(
  app: DashApp,
  password: string,
  hostname: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return submitAs(app, "admin", password, peerOf(hostname), headers);
}

/**
 * POSTs the sign-in form from `hostname` the way a script does: `fields`,
 * and, when `token` is given, it as both the form's token cookie and its
 * `_csrf` field (the pair is checked, nothing more, so a script can mint
 * one). Answers the status and `Retry-After`; the body is dropped.
 */
async function post(
  app: DashApp,
  hostname: string,
  fields: Record<string, string>,
  token?: string,
): Promise<{ status: number; retryAfter: string | null }> {
  const res = await app.request("/login", {
    method: "POST",
    headers: {
      origin: "http://localhost",
      "sec-fetch-site": "same-origin",
      ...(token === undefined ? {} : { cookie: `dash_login=${token}` }),
    },
    body: new URLSearchParams({
      ...(token === undefined ? {} : { _csrf: token }),
      ...fields,
    }),
  }, peerOf(hostname));
  await res.body?.cancel();
  return { status: res.status, retryAfter: res.headers.get("retry-after") };
}

/** A form token a script made up: 22 URL-safe characters. */
const MINTED = "guesser-made-this-up-0";

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

/** Options of {@linkcode hammer}. */
interface HammerOptions {
  seconds: number;
  stepMs: number;
  /** What the guessers send besides the token. @default {{ password: "guess" }} */
  guess?: Record<string, string>;
  /** Where {@linkcode ACCOUNT} signs in from the n-th time, once a second too. */
  account?: (n: number) => string;
}

/**
 * `guessers` send a wrong password with a valid form token every `stepMs`
 * for `seconds` (fake clock) while the administrator signs in properly
 * once a second, among them (after half of the guessers' turn), the n-th
 * time from `admin(n)` (its own address allows only 5 at once), and so does
 * {@linkcode ACCOUNT} from `account(n)` when given: their statuses, and how
 * the guessers were answered.
 */
async function hammer(
  h: DashHarness,
  guessers: string[],
  admin: (n: number) => string,
  options: HammerOptions,
): Promise<
  { admin: number[]; account: number[]; guessers: Map<number, number> }
> {
  const statuses: number[] = [];
  const account: number[] = [];
  const answered = new Map<number, number>();
  const steps = options.seconds * 1000 / options.stepMs;
  const adminTurn = Math.floor(guessers.length / 2);
  for (let step = 0; step < steps; step++) {
    for (const [i, address] of guessers.entries()) {
      if (i === adminTurn && step % (1000 / options.stepMs) === 0) {
        const n = statuses.length + 1;
        statuses.push(await statusOf(signInFrom(h.dash, PASSWORD, admin(n))));
        if (options.account) {
          const peer = peerOf(options.account(n));
          account.push(
            await statusOf(submitAs(h.dash, ACCOUNT, ACCOUNT_PASSWORD, peer)),
          );
        }
      }
      const guess = options.guess ?? { password: "guess" };
      const res = await post(h.dash, address, guess, MINTED);
      answered.set(res.status, (answered.get(res.status) ?? 0) + 1);
      if (res.status === 429) assert.match(res.retryAfter ?? "", /^\d+$/);
    }
    h.clock.advance(options.stepMs);
  }
  return { admin: statuses, account, guessers: answered };
}

/** The status of an answer, its body dropped. */
async function statusOf(answer: Promise<Response>): Promise<number> {
  const res = await answer;
  await res.body?.cancel();
  return res.status;
}

/** A stored account that signs in while others guess. */
const ACCOUNT = "ana@example.com";
/** A stored account whose password the guessers try. */
const TARGET = "target@example.com";

/**
 * Stores `email` with {@linkcode ACCOUNT_PASSWORD} hashed by scrypt at
 * N = 16 instead of 2^15 (each hash names its parameters): every check
 * still takes the path of a stored hash, in microseconds, so that a flood
 * of guesses runs in a test's time.
 */
async function addQuickAccount(kv: Deno.Kv, email: string): Promise<void> {
  await addAccount(kv, email, "viewer");
  const user = (await getUser(kv, email))!;
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const hash = scryptSync(ACCOUNT_PASSWORD, salt, 32, { N: 16, r: 1, p: 1 });
  const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
  const passwordHash = `scrypt$16$1$1$${base64(salt)}$${base64(hash)}`;
  await kv.set(userKey(email), encodeJson({ ...user, passwordHash }));
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

Deno.test("a network counts as its IPv6 /48, or its IPv4 /24", () => {
  assertEachGives(networkBucket, [
    ["2001:db8:1:2::99", "2001:db8:1::/48"],
    ["2001:0db8:0001:ffff:aaaa:bbbb:cccc:dddd", "2001:db8:1::/48"],
    ["[2001:db8:1:2:ffff::1]", "2001:db8:1::/48"],
    ["2001:db8::1", "2001:db8:0::/48"],
    ["fe80::1%eth0", "fe80:0:0::/48"],
    ["::ffff:198.51.100.7", "198.51.100.0/24"],
    ["198.51.100.7", "198.51.100.0/24"],
    ["unknown", "unknown"],
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
  "the addresses of one IPv4 /24 exhaust that network's 20 attempts, and no other network's",
  async (h) => {
    const { statuses, last } = await attempts(
      30,
      (i) => signInFrom(h.dash, `guess ${i}`, `198.51.100.${i}`),
    );
    assert.match(textOf(last), /Too many attempts: try again in 6 s/);
    assert.ok(statuses.slice(0, 20).every((s) => s === 401), String(statuses));
    assert.ok(statuses.slice(20).every((s) => s === 429), String(statuses));
    const same = await post(h.dash, "198.51.100.200", {
      password: PASSWORD,
    }, MINTED);
    assert.deepEqual(same, { status: 429, retryAfter: "6" }, "same /24");
    const other = await signInFrom(h.dash, PASSWORD, "198.51.101.200");
    assert.equal(other.status, 303, "the next /24 is counted apart");
    h.clock.advance(6_000);
    const later = await signInFrom(h.dash, PASSWORD, "198.51.100.200");
    assert.equal(later.status, 303, "the network refills one per 6 s");
  },
);

dashboardTest(
  "16 /64s of one IPv6 /48 share its 20 attempts; the next /48 signs in",
  async (h) => {
    const statuses: number[] = [];
    for (let net = 0; net < 16; net++) {
      for (let i = 1; i <= 5; i++) {
        const address = `2001:db8:60:${net.toString(16)}::${i}`;
        statuses.push(
          (await post(h.dash, address, { password: "x" }, MINTED))
            .status,
        );
      }
    }
    assert.equal(statuses.filter((s) => s === 401).length, 20);
    assert.ok(statuses.slice(20).every((s) => s === 429), String(statuses));
    assert.deepEqual(
      await post(h.dash, "2001:db8:60:ff::1", { password: PASSWORD }, MINTED),
      { status: 429, retryAfter: "6" },
    );
    const other = await signInFrom(h.dash, PASSWORD, "2001:db8:61::1");
    assert.equal(other.status, 303);
  },
);

dashboardTest(
  "30 guessers in 30 IPv4 /24s hammering for 19 s never refuse the administrator's sign-in",
  async (h) => {
    const guessers = Array.from({ length: 30 }, (_, i) => `10.${i}.0.7`);
    const seen = await hammer(h, guessers, (n) => `203.0.113.${n}`, {
      seconds: 19,
      stepMs: 100,
    });
    assert.deepEqual(seen.admin, Array(19).fill(303));
    // 5 at once, then one per 12 s each: the rest are refused.
    assert.equal(seen.guessers.get(401), 30 * 6);
    assert.equal(seen.guessers.get(429), 30 * 10 * 19 - 30 * 6);
  },
);

dashboardTest(
  "16 /64s of one IPv6 /48 hammering for 19 s never refuse the administrator's sign-in",
  async (h) => {
    const guessers = Array.from(
      { length: 16 },
      (_, i) => `2001:db8:60:${i.toString(16)}::1`,
    );
    const seen = await hammer(h, guessers, (n) => `2001:db8:61:${n}::1`, {
      seconds: 19,
      stepMs: 100,
    });
    assert.deepEqual(seen.admin, Array(19).fill(303));
    // The /48's 20 at once, then one per 6 s.
    assert.equal(seen.guessers.get(401), 20 + 3);
  },
);

/** Guessers in 35 IPv6 /48s, two /64s each. */
const SPREAD = Array.from({ length: 70 }, (_, i) => {
  const net = (0x100 + Math.floor(i / 2)).toString(16);
  return `2001:db8:${net}:${i % 2}::1`;
});

dashboardTest(
  "35 /48s of two /64s each guessing the administrator's password for 13 s refuse neither the administrator nor an account",
  async (h) => {
    await addQuickAccount(h.kv, ACCOUNT);
    const seen = await hammer(h, SPREAD, (n) => `203.0.113.${n}`, {
      seconds: 13,
      stepMs: 100,
      account: (n) => `198.18.0.${n}`,
    });
    assert.deepEqual(seen.admin, Array(13).fill(303));
    assert.deepEqual(seen.account, Array(13).fill(303));
    // Each /64 had its 5 at once and one per 12 s, as before.
    assert.equal(seen.guessers.get(401), 70 * 6);
  },
);

dashboardTest(
  "35 /48s of two /64s each guessing an account's password for 13 s: the administrator and an account from networks that were not guessing sign in every time, and hashing stays under the ceiling",
  async (h) => {
    await addQuickAccount(h.kv, ACCOUNT);
    await addQuickAccount(h.kv, TARGET);
    const seen = await hammer(h, SPREAD, (n) => `203.0.113.${n}`, {
      seconds: 13,
      stepMs: 100,
      guess: { email: TARGET, password: "guess" },
      account: (n) => `198.18.${n}.7`,
    });
    assert.deepEqual(seen.admin, Array(13).fill(303));
    assert.deepEqual(seen.account, Array(13).fill(303));
    // Every 401 is a hash: with the account's, within 300 at once and one
    // per 200 ms, and the guessers did spend the ceiling.
    const hashed = seen.guessers.get(401)! + seen.account.length;
    assert.ok(hashed <= 300 + 13 * 5, `${hashed} hashes in 13 s`);
    assert.ok(hashed >= 13 * 5, `${hashed} hashes in 13 s`);
    assert.ok(seen.guessers.get(429)! > 0);
  },
);

dashboardTest(
  "the hashes of all networks together stop at 300 at once, then one per 200 ms, and never the administrator",
  async (h) => {
    await addQuickAccount(h.kv, TARGET);
    const guess = { email: TARGET, password: "x" };
    const statuses: number[] = [];
    for (let i = 0; i < 320; i++) {
      const address = `10.${9 + (i >> 8)}.${i & 255}.1`;
      statuses.push((await post(h.dash, address, guess, MINTED)).status);
    }
    assert.ok(statuses.slice(0, 300).every((s) => s === 401), String(statuses));
    assert.ok(statuses.slice(300).every((s) => s === 429), String(statuses));
    assert.deepEqual(
      await post(h.dash, "203.0.113.9", guess, MINTED),
      { status: 429, retryAfter: "1" },
    );
    const admin = await signInFrom(h.dash, PASSWORD, "203.0.113.9");
    assert.equal(admin.status, 303, "the built-in account hashes nothing");
    h.clock.advance(1_000);
    const later = await post(h.dash, "203.0.113.9", guess, MINTED);
    assert.equal(later.status, 401, "the ceiling refills");
  },
);

dashboardTest(
  "a POST without the form's token takes no attempt: 403 a hundred times, then the address signs in",
  async (h) => {
    const forms: [Record<string, string>, string | undefined][] = [
      [{}, undefined], // the measured flood: no token, no password
      [{ password: "guess" }, undefined],
      [{ password: "guess", _csrf: MINTED }, undefined], // no cookie
    ];
    for (let i = 0; i < 100; i++) {
      const [fields, token] = forms[i % forms.length]!;
      assert.deepEqual(await post(h.dash, "198.51.100.9", fields, token), {
        status: 403,
        retryAfter: null,
      });
    }
    // A cookie whose field differs is refused the same.
    const res = await h.dash.request("/login", {
      method: "POST",
      headers: { origin: "http://localhost", cookie: `dash_login=${MINTED}` },
      body: new URLSearchParams({ _csrf: "another-made-up-token0" }),
    }, peerOf("198.51.100.9"));
    assert.equal(res.status, 403);
    await res.body?.cancel();
    // 30 addresses of 30 networks flooding tokenless: nobody's bucket moves.
    for (let i = 0; i < 30 * 20; i++) {
      const address = `10.${i % 30}.1.1`;
      assert.equal((await post(h.dash, address, {})).status, 403);
    }
    const own = await signInFrom(h.dash, PASSWORD, "198.51.100.9");
    assert.equal(own.status, 303);
    const { statuses } = await attempts(
      6,
      (i) => signInFrom(h.dash, `guess ${i}`, "10.0.1.1"),
    );
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
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

Deno.test("past the ceiling's first 20, a network that hashed within the minute waits for its turn, and one whose turn it is takes at once", () => {
  const clock = fakeClock();
  const limiter = new LoginLimiter({ now: clock.now });
  const waits: number[] = [];
  for (let net = 0; net < 16; net++) {
    for (let i = 1; i <= 20; i++) waits.push(limiter.take(`10.9.${net}.${i}`));
  }
  // The first network's 20, then one for each of the 15 others.
  assert.equal(waits.filter((w) => w === 0).length, 35);
  assert.deepEqual(waits.slice(0, 21), [...Array(20).fill(0), 0]);
  assert.equal(limiter.take("192.0.2.1"), 0, "a network whose turn it is");
  // 36 spent: the served wait until the ceiling is within 20 of full again.
  assert.equal(limiter.take("10.9.1.20"), 4);
  assert.equal(limiter.take("192.0.2.2"), 4, "its turn was taken");
  clock.advance(3_000);
  assert.equal(limiter.take("10.9.1.20"), 1);
  clock.advance(1_000);
  // 16 spent: four served networks take, up to 20; the fifth waits.
  const served = [1, 2, 3, 4, 5].map((net) => limiter.take(`10.9.${net}.20`));
  assert.deepEqual(served, [0, 0, 0, 0, 1]);
  assert.equal(limiter.take("10.9.5.20", { hashes: false }), 0);
});

Deno.test("40 IPv4 /24s of two addresses each hashing for 3 minutes: a network that was not guessing takes every second, and hashes stay within 300, then one per 200 ms", () => {
  const clock = fakeClock();
  const limiter = new LoginLimiter({ now: clock.now });
  const start = clock.now();
  let hashed = 0;
  const fresh: number[] = [];
  for (let step = 0; step < 1800; step++) {
    for (let net = 0; net < 40; net++) {
      for (const host of [1, 2]) {
        if (limiter.take(`10.${net}.0.${host}`) === 0) hashed++;
      }
    }
    if (step % 10 === 5) {
      const wait = limiter.take(`198.18.${fresh.length}.7`);
      fresh.push(wait);
      if (wait === 0) hashed++;
    }
    const elapsed = clock.now() - start;
    assert.ok(
      hashed <= 300 + Math.floor(elapsed / 200) + 1,
      `${hashed} hashes`,
    );
    clock.advance(100);
  }
  assert.deepEqual(fresh, Array(180).fill(0));
  assert.ok(hashed >= 5 * 180, `${hashed} hashes: the guessers spent it`);
});

Deno.test("a wider bucket never allows less than a narrower one", () => {
  const clock = fakeClock();
  const limiter = new LoginLimiter({ now: clock.now, burst: 1000 });
  let admitted = 0;
  for (let i = 0; i < 1000; i++) {
    if (limiter.take("127.0.0.1") === 0) admitted++;
  }
  assert.equal(admitted, 1000, "the network and the ceiling follow burst");
  assert.equal(limiter.take("127.0.0.1"), 12);
});

Deno.test("the sign-in tables stay bounded in entries under a flood of addresses", () => {
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
  assert.equal(limiter.networks, 1000);
  const grown = Deno.memoryUsage().heapUsed - before;
  assert.ok(grown < 32 * 1024 * 1024, `heap grew ${grown} bytes`);
});
