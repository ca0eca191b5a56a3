/**
 * What a logger adds to `device` by itself (`deviceContext`, on by default):
 * in a browser, the user agent, platform, language, viewport and page URL
 * (without its query and fragment, which may hold tokens), read for each
 * entry, as the page and its size change; on a server (Deno, Node, Bun),
 * the runtime, the operating system and the host name, read once. Nothing
 * here throws or asks for a permission: a value that cannot be read is
 * left out.
 *
 * @module
 */

/** The parts of the global scope read, all optional. */
interface Scope {
  document?: unknown;
  navigator?: {
    userAgent?: string;
    platform?: string;
    language?: string;
    userAgentData?: { platform?: string };
  };
  innerWidth?: number;
  innerHeight?: number;
  location?: { origin?: string; pathname?: string };
  Deno?: {
    version?: { deno?: string };
    build?: { os?: string; arch?: string };
    hostname?: () => string;
    permissions?: {
      querySync?: (d: { name: string; kind?: string }) => { state: string };
    };
  };
  Bun?: { version?: string };
  process?: {
    versions?: { node?: string };
    platform?: string;
    arch?: string;
    env?: Record<string, string | undefined>;
  };
}

/** Keeps the members whose value is a non-empty string. */
function defined(values: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    if (typeof value === "string" && value !== "") out[key] = value;
  }
  return out;
}

/**
 * User agent tokens in the order they decide the browser (Edge and Opera
 * also say Chrome, Chrome also says Safari), with the name shown when it
 * differs.
 */
const BROWSERS: [string, string?][] = [
  ["Edg", "Edge"],
  ["OPR", "Opera"],
  ["Firefox"],
  ["Chrome"],
  ["Version", "Safari"],
];
/**
 * User agent words in the order they decide the OS (Android also says
 * Linux, iOS also says Mac OS X), with the name shown when it differs.
 */
const SYSTEMS: [string, string?][] = [
  ["Android"],
  ["iPhone", "iOS"],
  ["iPad", "iOS"],
  ["Windows"],
  ["CrOS", "ChromeOS"],
  ["Mac OS X", "macOS"],
  ["Linux"],
];

/**
 * The browser's name and major version (`Firefox 133`), read from its user
 * agent text.
 *
 * @example
 * ```ts
 * browserName("… Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"); // "Edge 131"
 * ```
 */
export function browserName(userAgent = ""): string | undefined {
  for (const [token, name = token] of BROWSERS) {
    const version = new RegExp(token + "/(\\d+)").exec(userAgent);
    if (version) return `${name} ${version[1]}`;
  }
}

/** The operating system named by a user agent text (`macOS`, `iOS`, …). */
function systemName(userAgent = ""): string | undefined {
  for (const [word, name = word] of SYSTEMS) {
    if (userAgent.includes(word)) return name;
  }
}

/**
 * The browser's context at this moment: `browser` (`Firefox 133`), `os`
 * (`macOS`), `userAgent`, `language`, `viewport` (`1280x800`) and `url`.
 * `browser` and `os` use the names a server's `os` and a mobile app's use,
 * so that one facet counts them all.
 *
 * @example
 * ```ts
 * browserContext(globalThis); // { browser: "Chrome 131", os: "macOS", viewport: "1280x800", … }
 * ```
 */
export function browserContext(scope: unknown): Record<string, string> {
  const s = scope as Scope;
  const nav = s.navigator ?? {};
  const loc = s.location;
  return defined({
    browser: browserName(nav.userAgent),
    os: nav.userAgentData?.platform || systemName(nav.userAgent),
    userAgent: nav.userAgent,
    language: nav.language,
    viewport: typeof s.innerWidth === "number"
      ? `${s.innerWidth}x${s.innerHeight}`
      : undefined,
    url: loc?.origin && loc.pathname !== undefined
      ? loc.origin + loc.pathname
      : undefined,
  });
}

function denoHost(deno: NonNullable<Scope["Deno"]>): string | undefined {
  try {
    // Asked first, so that reading it never prompts for a permission.
    const state = deno.permissions?.querySync?.({
      name: "sys",
      kind: "hostname",
    }).state;
    return state === "granted" ? deno.hostname?.() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The server's context: `runtime` (`deno 2.9.6`, `node 22.1.0`,
 * `bun 1.2.0`), `os` (`linux x86_64` in Deno, `linux x64` in Node) and
 * `host`.
 *
 * @example
 * ```ts
 * serverContext(globalThis); // { runtime: "deno 2.9.6", os: "linux x86_64", host: "api-1" }
 * ```
 */
export function serverContext(scope: unknown): Record<string, string> {
  const s = scope as Scope;
  const env = s.process?.env ?? {};
  if (s.Deno?.version?.deno) {
    return defined({
      runtime: `deno ${s.Deno.version.deno}`,
      os: [s.Deno.build?.os, s.Deno.build?.arch].filter(Boolean).join(" "),
      host: denoHost(s.Deno),
    });
  }
  const proc = s.process;
  return defined({
    runtime: s.Bun?.version
      ? `bun ${s.Bun.version}`
      : proc?.versions?.node
      ? `node ${proc.versions.node}`
      : undefined,
    os: [proc?.platform, proc?.arch].filter(Boolean).join(" "),
    host: env.HOSTNAME ?? env.COMPUTERNAME,
  });
}

/**
 * A function giving the `device` of each entry: the context of where the
 * logger runs (when `auto`), with the logger's own `device` over it; a
 * `device` string is sent as it is.
 *
 * @example
 * ```ts
 * const device = deviceOf(globalThis, true, { app: "shop" });
 * device(); // { runtime: "deno 2.9.6", …, app: "shop" }
 * ```
 */
export function deviceOf(
  scope: unknown,
  auto: boolean,
  own: Record<string, unknown> | string | undefined,
): () => Record<string, unknown> | string | undefined {
  if (!auto || typeof own === "string") return () => own;
  if ((scope as Scope).document) {
    return () => ({ ...browserContext(scope), ...own });
  }
  const fixed = { ...serverContext(scope), ...own };
  return () => fixed;
}
