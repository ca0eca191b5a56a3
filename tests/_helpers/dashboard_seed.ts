/**
 * A store of varied entries for the dashboard tests and screenshots: chunks
 * and histogram counters written the way the consumer writes them
 * (db/storage/write.ts `storeLogs`), with receipt times spread over a span ending at
 * `now`, so histograms have bars.
 *
 * @module
 */
import type { LogRecord } from "../../domain/entry.ts";
import { storeLogs } from "../../db/storage/write.ts";
import { createId } from "../../domain/ids.ts";

const TITLES: [string, string, Record<string, unknown>][] = [
  ["info", "Page loaded", { path: "/checkout", ms: 182 }],
  ["info", "Signed in", { method: "password" }],
  ["info", "Search", { query: "running shoes", results: 42 }],
  ["warning", "Slow response", { path: "/api/cart", ms: 2300 }],
  ["info", "Added to cart", { sku: "SH-0042", qty: 1 }],
  ["error", "Payment failed", { orderId: 1234, code: "card_declined" }],
  ["info", "Page loaded", { path: "/", ms: 95 }],
  ["warning", "Retrying request", { attempt: 2, path: "/api/stock" }],
  ["critical", "Database unreachable", { host: "db-2", after: "30s" }],
  ["error", "Unhandled exception", { message: "TypeError: x is undefined" }],
];

/** Options of {@linkcode seedEntries}. */
export interface SeedOptions {
  count: number;
  /** Receipt time of the newest entry. */
  now: number;
  /** Time from the oldest to the newest entry. */
  spanMs: number;
}

/**
 * Stores `count` entries under `projectId`; returns them oldest first.
 *
 * @example
 * ```ts
 * const records = await seedEntries(kv, project.id, { count: 200, now, spanMs: 3_600_000 });
 * ```
 */
export async function seedEntries(
  kv: Deno.Kv,
  projectId: string,
  options: SeedOptions,
): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  for (let i = 0; i < options.count; i++) {
    // Denser towards the end, with a burst of errors two thirds in.
    const f = Math.sqrt((i + 1) / options.count);
    const at = Math.round(options.now - options.spanMs * (1 - f));
    const [level, title, data] = TITLES[(i * 7) % TITLES.length]!;
    const burst = i % 13 === 0 && f > 0.6 && f < 0.7;
    records.push({
      id: createId(at),
      receivedAt: at,
      level: burst ? "error" : level,
      data: { title: burst ? "Payment failed" : title, ...data },
      device: i % 3 === 0
        ? { type: "browser", os: "macOS", browser: "Firefox 142" }
        : { type: "mobile", os: "iOS 18.2", model: "iPhone15,2" },
      context: {
        environment: "production",
        userId: `u-${(i * 37) % 50}`,
        traceId: `s-${Math.floor(i / 5)}`,
      },
      ...(i % 3 === 0
        ? { origin: "https://shop.example.com", auth: "origin" as const }
        : { appid: "com.example.shop.ios", auth: "appid" as const }),
    });
  }
  records.sort((a, b) => a.id < b.id ? -1 : 1);
  // In batches of 200, as the consumer commits them.
  for (let i = 0; i < records.length; i += 200) {
    const op = kv.atomic();
    storeLogs(op, projectId, records.slice(i, i + 200), {
      now: options.now,
      retentionMs: 30 * 86_400_000,
    });
    await op.commit();
  }
  return records;
}

/**
 * `data` of `n` members, `{"k0":0,"k1":1,…}` with keys in base 36: 5,600 of
 * them make about 50 KB, within the endpoint's default body limit.
 */
export function wideData(n: number): Record<string, number> {
  const data: Record<string, number> = {};
  for (let i = 0; i < n; i++) data[`k${i.toString(36)}`] = i;
  return data;
}
