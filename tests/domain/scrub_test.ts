import assert from "node:assert/strict";
import {
  compileScrubber,
  FILTERED,
  keyWords,
  MAX_KEY_MEMO,
  MAX_KEY_MEMO_CHARS,
  type ScrubRule,
} from "../../domain/scrub.ts";
import {
  ibanValid,
  luhnValid,
  PatternError,
  patternFinder,
  validatePattern,
} from "../../domain/detectors.ts";

const KEY = "k".repeat(32);

function scrubbed(
  data: Record<string, unknown>,
  rules: ScrubRule[] = [],
): Record<string, unknown> {
  return compileScrubber(rules, { hashKey: KEY }).scrub({ data }).entry.data;
}

Deno.test("keys naming secrets are filtered at any depth, in any case and spelling", () => {
  const data = {
    password: "hunter2",
    user: { Password: "x1", userPassword: "x2", PASSWD: "x3" },
    headers: {
      Authorization: "Basic Zm9v",
      Cookie: "a=b",
      "X-Api-Key": "k1",
      apikey: "k2",
      APIKey: "k3",
    },
    list: [{ client_secret: "s" }, { accessToken: "t" }],
    sessionId: "s1",
    session_id: "s2",
    cardNumber: "4111",
    cvv: 123,
    ssn: "078-05-1120",
    nested: { card: { brand: "visa" } },
  };
  const out = JSON.stringify(scrubbed(data));
  for (
    const secret of [
      "hunter2",
      "x1",
      "x2",
      "x3",
      "Zm9v",
      "a=b",
      "k1",
      "k2",
      "k3",
      '"s"',
      '"t"',
      "s1",
      "s2",
      "4111",
      "123",
      "078-05",
      "visa",
    ]
  ) {
    assert.ok(!out.includes(secret), `${secret} left in ${out}`);
  }
  assert.equal(
    (scrubbed(data).user as Record<string, unknown>).Password,
    FILTERED,
  );
});

Deno.test("keys that only contain a secret's letters are kept", () => {
  const data = {
    cardinality: 3,
    className: "btn",
    discard: true,
    session: "s",
    tokenizer: "bpe",
    passwordless: false,
  };
  assert.deepEqual(scrubbed(data), data);
});

Deno.test("keys are split into words at case changes and separators", () => {
  assert.deepEqual(keyWords("X-ApiKey"), ["x", "api", "key"]);
  assert.deepEqual(keyWords("APIKey"), ["api", "key"]);
  assert.deepEqual(keyWords("session_id"), ["session", "id"]);
});

Deno.test("Luhn-valid card numbers inside strings are filtered, others kept", () => {
  const data = {
    message: "Paid with 4111 1111 1111 1111 today",
    other: "card 4242-4242-4242-4242, order 4111111111111112",
    id: "1767225600000",
    amex: "378282246310005",
  };
  const out = scrubbed(data);
  assert.equal(out.message, `Paid with ${FILTERED} today`);
  assert.equal(out.other, `card ${FILTERED}, order 4111111111111112`);
  assert.equal(out.id, "1767225600000");
  assert.equal(out.amex, FILTERED);
  assert.ok(luhnValid("4111111111111111"));
  assert.ok(!luhnValid("4111111111111112"));
});

Deno.test("an entry without secrets is returned as it is, unchanged", () => {
  const scrubber = compileScrubber([]);
  const record = {
    data: { message: "ok", n: 4 },
    context: { service: "api" },
    device: "server",
  };
  const result = scrubber.scrub(record);
  assert.equal(result.changed, false);
  assert.equal(result.entry, record);
});

Deno.test("the text trigger lets through every entry the scrubber would change", async (t) => {
  const scrubber = compileScrubber([
    { id: "key:email", kind: "key", key: "user_email", action: "remove" },
    { id: "detector:ip", kind: "detector", detector: "ip", action: "remove" },
  ]);
  const cases: Record<string, unknown>[] = [
    { "API-KEY": "x" },
    { "api\nkey": "x" },
    { userEmail: "x" },
    { m: "from 10.0.0.1" },
    { m: "from ::1" },
    { m: "4111-1111-1111-1111" },
  ];
  for (const data of cases) {
    await t.step(JSON.stringify(data), () => {
      assert.equal(scrubber.scrub({ data }).changed, true);
      assert.equal(scrubber.candidate(JSON.stringify({ data })), true);
    });
  }
  assert.equal(
    scrubber.candidate(
      JSON.stringify({ data: { message: "GET /users 200 in 12 ms" } }),
    ),
    false,
  );
});

Deno.test("detectors find emails, IPs, tokens and IBANs", () => {
  const rules: ScrubRule[] = [
    {
      id: "detector:email",
      kind: "detector",
      detector: "email",
      action: "remove",
    },
    { id: "detector:ip", kind: "detector", detector: "ip", action: "remove" },
    {
      id: "detector:token",
      kind: "detector",
      detector: "token",
      action: "remove",
    },
    {
      id: "detector:iban",
      kind: "detector",
      detector: "iban",
      action: "remove",
    },
  ];
  const out = scrubbed({
    a: "mail ana.b+x@example.co.uk now",
    b: "from 192.168.1.20 and 2001:db8::8a2e:370:7334 at 10:30:00",
    c: "Bearer abcdefghijklmnop.qrs",
    d: "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-nature",
    e: "pay to DE89 3704 0044 0532 0130 00 please",
    f: "version 1.2.3 and not@domain",
    // A JWT starts after no base64url character: a run of "eyJ-" (tried
    // from each of its starts, it took seconds) holds none.
    g: "eyJ-".repeat(2000) + " token=" +
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
  }, rules);
  assert.equal(out.a, `mail ${FILTERED} now`);
  assert.equal(out.b, `from ${FILTERED} and ${FILTERED} at 10:30:00`);
  assert.equal(out.c, FILTERED);
  assert.equal(out.d, `jwt ${FILTERED}`);
  assert.equal(out.e, `pay to ${FILTERED} please`);
  assert.equal(out.f, "version 1.2.3 and not@domain");
  assert.equal(out.g, "eyJ-".repeat(2000) + ` token=${FILTERED}`);
  assert.ok(ibanValid("GB82WEST12345698765432"));
  assert.ok(!ibanValid("GB82WEST12345698765431"));
});

Deno.test("mask keeps the last 4 characters and hash is keyed, stable and idempotent", () => {
  const rules: ScrubRule[] = [
    { id: "key:email", kind: "key", key: "email", action: "hash" },
    { id: "key:phone", kind: "key", key: "phone", action: "mask" },
    { id: "detector:card", kind: "detector", detector: "card", action: "mask" },
  ];
  const scrubber = compileScrubber(rules, { hashKey: KEY });
  const data = {
    email: "ana@example.com",
    phone: "+44 7700 900123",
    pin: "card 4111111111111111",
    short: { phone: "123" },
  };
  const once = scrubber.scrub({ data }).entry;
  assert.match(once.data.email as string, /^hash:[0-9a-f]{16}$/);
  assert.equal(once.data.phone, "***********0123");
  assert.equal(once.data.pin, "card ************1111");
  assert.deepEqual(once.data.short, { phone: "****" });
  assert.equal(scrubber.scrub({ data }).entry.data.email, once.data.email);
  const other =
    compileScrubber(rules, { hashKey: "other" }).scrub({ data }).entry;
  assert.notEqual(other.data.email, once.data.email);
  const twice = scrubber.scrub(once);
  assert.equal(twice.changed, false);
  assert.deepEqual(twice.entry, once);
});

Deno.test("custom patterns run everywhere, in windows over long strings", () => {
  const rules: ScrubRule[] = [{
    id: "pattern:1",
    kind: "pattern",
    pattern: "ORD-[0-9]{6}",
    action: "remove",
  }];
  const long = "x".repeat(5000) + " ORD-123456";
  const out = scrubbed({ m: "order ORD-123456 paid", long }, rules);
  assert.equal(out.m, `order ${FILTERED} paid`);
  assert.equal(out.long, "x".repeat(5000) + ` ${FILTERED}`);
  const across = "y".repeat(250) + "ORD-654321";
  assert.deepEqual(patternFinder(validatePattern("ORD-[0-9]{6}"))(across), [[
    250,
    260,
  ]]);
});

Deno.test("custom patterns of unbounded cost are refused", async (t) => {
  for (
    const pattern of [
      "(a+)+$",
      "(a|aa)*b",
      "(\\w+\\s?)*$",
      "(x)\\1",
      "(?<=a)b",
      "a*b+",
      "",
      "a?",
      "(",
      "x".repeat(201),
      // Bounded, but their ways multiply: seconds to hours over a window.
      "a{0,30}a{0,30}a{0,30}b",
      "a?".repeat(11) + "b",
      "(?:a|a)".repeat(11) + "b",
      "[a-z0-9]{0,50}[a-z]+!",
    ]
  ) {
    await t.step(pattern.slice(0, 20), () => {
      assert.throws(() => validatePattern(pattern), PatternError);
    });
  }
  for (
    const pattern of [
      "ORD-[0-9]{6}",
      "(?:ab)+",
      "(ab|cd)?x",
      "[a-z]+@corp",
      "a+?b",
      "(?<id>u_[0-9]+)",
      "[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}",
      "[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{4}[ -]?[0-9]{4}",
      "a{0,31}a{0,31}b",
    ]
  ) {
    assert.ok(validatePattern(pattern) instanceof RegExp, pattern);
  }
});

/** A scrubber of one custom pattern that removes what it finds. */
function onePattern(pattern: string, options: { now?: () => number } = {}) {
  return compileScrubber([
    { id: "pattern:1", kind: "pattern", pattern, action: "remove" },
  ], options);
}

Deno.test("a stored pattern that the bounds now refuse is never run: every string is filtered, as by one out of time", () => {
  const scrubber = onePattern("a{0,30}a{0,30}a{0,30}b");
  const out = scrubber.scrub({ data: { text: "a".repeat(256), n: 7 } });
  // Names are strings too: both are filtered, numbered apart, and the
  // number is kept.
  assert.deepEqual(out.entry.data, {
    [FILTERED]: FILTERED,
    [`${FILTERED} (2)`]: 7,
  });
  assert.equal(out.changed, true);
});

Deno.test("patterns that run out of the time budget filter what they did not search", () => {
  let clock = 0;
  const scrubber = onePattern("[a-z0-9]{0,31}[a-z]{0,31}!", {
    now: () => clock,
  });
  const data = { a: "fine", b: "a".repeat(2_000) };
  const result = scrubber.scrub({ data });
  assert.deepEqual(result.entry.data, data);
  assert.equal(result.changed, false);
  const slow = onePattern("[a-z0-9]{0,31}[a-z]{0,31}!", { now: () => clock++ });
  const cut = slow.scrub({ data: { a: "fine", b: "a".repeat(20_000) } })
    .entry.data;
  assert.equal(cut.a, "fine");
  assert.equal(cut.b, FILTERED);
});

Deno.test("an allowed pattern over an adversarial string stays within its budget", () => {
  // At the bound of ways to match: about 2 ms a window, so 64 KiB takes far
  // longer than the budget.
  const scrubber = onePattern("[a-z0-9]{0,31}[a-z]{0,31}!");
  const out = scrubber.scrub({ data: { a: "a".repeat(65_536) } });
  // Filtered: the budget ran out before the string was searched whole (its
  // own clock is tested above).
  assert.equal(out.entry.data.a, FILTERED);
});

Deno.test("keys are judged alike before and after the key memo fills", () => {
  const scrubber = compileScrubber([]);
  const many: Record<string, string> = {};
  for (let i = 0; i < MAX_KEY_MEMO + 10; i++) many[`field${i}`] = "kept";
  many.userPassword = "hunter2";
  const first = scrubber.scrub({ data: many }).entry.data;
  assert.equal(first.userPassword, FILTERED);
  assert.equal(first.field0, "kept");
  assert.equal(first[`field${MAX_KEY_MEMO + 9}`], "kept");
  const again = scrubber.scrub({
    data: { field0: "kept", userPassword: "hunter2", sessionId: "s" },
  }).entry.data;
  assert.deepEqual(again, {
    field0: "kept",
    userPassword: FILTERED,
    sessionId: FILTERED,
  });
  // A key too long to be remembered is judged all the same, each time.
  const long = "x".repeat(MAX_KEY_MEMO_CHARS) + "Token";
  for (let i = 0; i < 2; i++) {
    assert.equal(
      scrubber.scrub({ data: { [long]: "t" } }).entry.data[long],
      FILTERED,
    );
  }
});

Deno.test("member names rewritten into one another's keep every value, numbered", () => {
  const scrubber = compileScrubber([]);
  const data = {
    "[Filtered]": "important",
    "4111111111111111": "x",
    "4012888888881881": "y",
  };
  assert.deepEqual(scrubber.scrub({ data }).entry.data, {
    "[Filtered]": "important",
    "[Filtered] (2)": "x",
    "[Filtered] (3)": "y",
  });
  const later = { "4111111111111111": "x", "[Filtered]": "kept" };
  assert.deepEqual(scrubber.scrub({ data: later }).entry.data, {
    "[Filtered] (2)": "x",
    "[Filtered]": "kept",
  });
});
