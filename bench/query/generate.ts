/**
 * Seeded generator of realistic log entries for the query benchmark (same
 * seed, same sequence): 85 % info, 10 % warning, 4 % error, 1 % critical;
 * titles and messages from templates with numbers, hex ids, paths and URLs;
 * one of 10,000 users, a session, environment, release and one of 6 services
 * (drawn from a random sequence of its own, so that adding it changed no
 * other value); a device (native apps add an `appid`). No `projectId`: the caller sets it. Every run of
 * letters is one of {@linkcode WORDS} or inside a hex id, so a word that
 * {@linkcode canOccur} rejects is only where {@linkcode plantWord} put it.
 *
 * @module
 */

/** The levels generated, in increasing severity. */
export type Level = "info" | "warning" | "error" | "critical";

/** One generated entry: the body of `POST /api/v1/logs` without `projectId`. */
export interface GeneratedEntry {
  level: Level;
  projectId?: string;
  data: {
    title: string;
    message: string;
    /** HTTP status, when the message states one. */
    status?: number;
    /** Milliseconds, when the message states a duration. */
    durationMs?: number;
  };
  context: Record<
    "userId" | "traceId" | "environment" | "release" | "service",
    string
  >;
  device: Record<"type" | "os" | "platform" | "browser" | "screen", string>;
  appid?: string;
}

/** Distinct `context.userId` values: `user_0` to `user_9999`. */
export const USERS = 10_000;
/** One template a line, `title|message`; `{name}` is filled by `FILL` or from `LISTS`. */
const TEMPLATES: Record<Level, string> = {
  info: `Request completed|GET {path} answered {status} in {ms} ms
User signed in|User {user} signed in from {url}
Page viewed|Viewed {url} after {ms} ms
File uploaded|Uploaded {file} ({n} KB) to {path}
Job finished|Job {job} {id} processed {n} items in {ms} ms
Search performed|Search for {term} returned {n} results
Order paid|Order {order} paid: {amount} EUR by {user}
Email sent|Sent {job} email {id} to {user}
Cache refreshed|Refreshed {n} keys of {service} cache in {ms} ms`,
  warning: `Slow request|POST {path} took {ms} ms (status {status})
Retrying request|Retry {n} of {url} after {status}
Deprecated endpoint|Client called deprecated {path}; release {release}
High memory usage|Heap at {percent} % on {host}
Rate limit near|User {user} at {percent} % of quota on {path}`,
  error: `Request failed|PUT {path} answered {status} after {ms} ms
Checkout failed|Payment provider answered {status} for order {order}
Database timeout|Query on {table} timed out after {ms} ms ({id})
Unhandled exception|TypeError in {file} at line {n} ({url})
Upload rejected|File {file} of {n} KB refused by {service}`,
  critical: `Service unavailable|{service} answered {status} to {n} requests
Disk almost full|Volume of {host} at {percent} %, writes failing
Data corruption detected|Checksum mismatch in {table} row {id}`,
};
const split = (text: string) => text.split("|");
/** A list where `value*n` counts n times. */
const weighted = (text: string) =>
  split(text).flatMap((item) => {
    const [value = "", times = "1"] = item.split("*");
    return Array<string>(Number(times)).fill(value);
  });
const LEVELS = weighted("info*85|warning*10|error*4|critical") as Level[];
const LISTS: Record<string, string[]> = {
  segment: split("api|v1|v2|users|orders|cart|checkout|products|search|assets"),
  host: split("shop.example.com|api.example.com|cdn.example.net|auth.example"),
  file: split("invoice.pdf|avatar.png|export.csv|main.js|app.css|report.xlsx"),
  term: split("shoes|red dress|laptop bag|gift card|coffee|winter jacket"),
  job: split("welcome|digest|reminder|receipt|cleanup|reindex"),
  service: split("payments|inventory|gateway|search|billing"),
  /** `context.service`: the services above and one more. */
  services: split("payments|inventory|gateway|search|billing|orders"),
  table: split("orders|users|sessions|payments|events"),
  release: split("2026.6.3|2026.7.0|2026.7.1|2026.7.2|2026.8.0"),
  environment: weighted("production*45|staging*4|development*1"),
  // HTTP status by level.
  info: split("200|200|200|201|204|304"),
  warning: split("404|409|429|499"),
  error: split("500|502|503|504"),
  critical: split("500|503"),
};
/** Device profiles, `type|os|platform|browser|screen[|appid]`. */
const DEVICES = `desktop|Windows 11|web|Chrome 131|1920x1080
desktop|Windows 10|web|Edge 131|1366x768
desktop|macOS 15|web|Safari 18|2560x1600
desktop|macOS 14|web|Firefox 133|1440x900
desktop|Ubuntu 24.04|web|Firefox 133|1920x1080
mobile|Android 15|web|Chrome 131|412x915
mobile|iOS 18|web|Safari 18|390x844
mobile|Android 14|android|WebView 131|360x800|com.example.shop.android
mobile|iOS 18|ios|WKWebView|393x852|com.example.shop.ios
tablet|iPadOS 18|ios|Safari 18|820x1180`;
const PROFILES = DEVICES.split("\n").map((line) => {
  const [type = "", os = "", platform = "", browser = "", screen = "", appid] =
    split(line);
  return { device: { type, os, platform, browser, screen }, appid };
});
/** Letters the code below writes, and the entry's member names. */
const OTHER_WORDS = "user_ ord_ s- https ?page= level data title message " +
  "status durationMs context userId traceId environment release service " +
  "device " +
  "type os platform browser screen appid";

/** What the fillers of one entry share. */
interface Scratch {
  next: () => number;
  level: Level;
  userId: string;
  release: string;
  status?: number;
  ms?: number;
}
type Fill = (s: Scratch) => string;
const pick = <T>(next: () => number, list: readonly T[]): T =>
  list[Math.floor(next() * list.length)]!;
const int = (s: Scratch, max: number) => 1 + Math.floor(s.next() * max);
const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0");
const seg = (s: Scratch) => pick(s.next, LISTS.segment!);
const path: Fill = (s) => `/${seg(s)}/${seg(s)}/${int(s, 99_999)}`;
const FILL: Record<string, Fill> = {
  n: (s) => String(int(s, 5000)),
  // Mostly short, a few long: the bound itself is random.
  ms: (s) => String(s.ms = int(s, 3000 * s.next())),
  status: (s) => String(s.status = +pick(s.next, LISTS[s.level]!)),
  id: (s) => hex(s.next() * 0x1_0000_0000),
  path,
  url: (s) =>
    `https://${pick(s.next, LISTS.host!)}${path(s)}?page=${int(s, 50)}`,
  user: (s) => s.userId,
  order: (s) => `ord_${1_000_000 + int(s, 8_999_999)}`,
  amount: (s) => (s.next() * 500).toFixed(2),
  percent: (s) => String(80 + int(s, 19)),
  release: (s) => s.release,
};
/** A template as text, and fillers at odd indexes. */
function compile(text: string): (string | Fill)[] {
  return text.split(/\{(\w+)\}/).map((name, i) => {
    const list = LISTS[name];
    if (i % 2 === 0) return name;
    if (FILL[name]) return FILL[name];
    if (!list) throw new Error(`Cannot fill "{${name}}": no such placeholder`);
    return (s: Scratch) => pick(s.next, list);
  });
}
const COMPILED = Object.fromEntries(
  Object.entries(TEMPLATES).map(([level, lines]) => [
    level,
    lines.split("\n").map((line) => split(line).map(compile)),
  ]),
) as Record<Level, (string | Fill)[][][]>;

function render(parts: (string | Fill)[], s: Scratch): string {
  let out = "";
  for (const part of parts) out += typeof part === "string" ? part : part(s);
  return out;
}

/** Every word (run of letters, lowercased) an entry can hold, sorted. */
export const WORDS: readonly string[] = [
  ...new Set(
    [LEVELS, Object.values(TEMPLATES), Object.values(LISTS), DEVICES]
      .flat(2).concat(OTHER_WORDS).join(" ").replace(/\{\w+\}/g, " ")
      .toLowerCase().match(/[a-z]+/g),
  ),
].sort();
const CORPUS = WORDS.join(" ");

/**
 * Whether `word` can appear in a generated entry, as a word or inside one
 * (case-insensitively): false means only a planted entry holds it.
 *
 * @example
 * ```ts
 * canOccur("checkout"); // true
 * canOccur("zanzibar"); // false
 * ```
 */
export function canOccur(word: string): boolean {
  const w = word.toLowerCase();
  return CORPUS.includes(w) || /^[\da-f]+$/.test(w);
}

/**
 * Plants `word` in an entry's message (appended after a space); returns the
 * entry.
 *
 * @example
 * ```ts
 * plantWord(generator.next(), "zanzibar").data.message; // "... zanzibar"
 * ```
 */
export function plantWord(entry: GeneratedEntry, word: string): GeneratedEntry {
  entry.data.message += ` ${word}`;
  return entry;
}

/**
 * Uniform numbers in [0, 1) from a seed (mulberry32: 32 bits of state,
 * period 2^32, a few integer operations).
 *
 * @example
 * ```ts
 * const next = mulberry32(42);
 * next(); // the same number for the same seed
 * ```
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
}

/**
 * A generator of entries; the same seed gives the same sequence.
 *
 * @example
 * ```ts
 * const generator = createGenerator(42);
 * const body = JSON.stringify({ ...generator.next(), projectId });
 * ```
 */
export function createGenerator(seed: number): { next(): GeneratedEntry } {
  const next = mulberry32(seed);
  const nextService = mulberry32(seed ^ 0x5e4c1ce);
  let count = 0;
  return {
    next(): GeneratedEntry {
      const level = pick(next, LEVELS);
      const user = Math.floor(next() * USERS);
      // A user keeps a session for 65,536 entries, then starts another.
      const session = Math.imul(user + 1, 0x9e3779b1) ^ seed ^ (count++ >> 16);
      const release = pick(next, LISTS.release!);
      const s: Scratch = { next, level, userId: `user_${user}`, release };
      const [title = [], message = []] = pick(next, COMPILED[level]);
      const profile = pick(next, PROFILES);
      const entry: GeneratedEntry = {
        level,
        data: { title: render(title, s), message: render(message, s) },
        context: {
          userId: s.userId,
          traceId: `s-${hex(session)}`,
          environment: pick(next, LISTS.environment!),
          release,
          service: pick(nextService, LISTS.services!),
        },
        device: { ...profile.device },
      };
      if (s.status !== undefined) entry.data.status = s.status;
      if (s.ms !== undefined) entry.data.durationMs = s.ms;
      if (profile.appid !== undefined) entry.appid = profile.appid;
      return entry;
    },
  };
}
