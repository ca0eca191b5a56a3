/**
 * Variants of the bare server (`bench/bare.ts`) that each add one piece of
 * the service's answer, so that `bench/cpu.ts` can price it alone: the ways
 * of building a response with the CORS headers, and Hono's routing.
 *
 * Every variant reads the body and answers `200 {"status":"queued"}` with
 * `Content-Type: application/json`; the `cors-*` ones add the four CORS
 * headers of a request with an `Origin`.
 *
 * ```sh
 * deno run --allow-net bench/variants.ts --variant cors-set --port 8002
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";
import { Hono } from "hono";

const QUEUED = '{"status":"queued"}';
const EXPOSED =
  "Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset";
const JSON_TYPE = { "Content-Type": "application/json" };

function corsRecord(origin: string): Record<string, string> {
  return {
    "Access-Control-Allow-Origin": origin,
    "Access-Control-Allow-Credentials": "true",
    "Vary": "Origin",
    "Access-Control-Expose-Headers": EXPOSED,
  };
}

/** Per-origin caches, as a server would keep them (bounded elsewhere). */
const initByOrigin = new Map<string, ResponseInit>();
const pairsByOrigin = new Map<string, [string, string][]>();
const templateByOrigin = new Map<string, Response>();

/** The variants, each a whole handler. */
export const VARIANTS: Record<string, (req: Request) => Promise<Response>> = {
  /** The bare server again, as a check of the method. */
  async plain(req) {
    await req.arrayBuffer();
    return new Response(QUEUED, { status: 200, headers: JSON_TYPE });
  },
  /** The service's way: the response built, then each header set. */
  async "cors-set"(req) {
    await req.arrayBuffer();
    const origin = req.headers.get("origin") ?? "";
    const res = new Response(QUEUED, { status: 200, headers: JSON_TYPE });
    const headers = corsRecord(origin);
    for (const name in headers) res.headers.set(name, headers[name]!);
    return res;
  },
  /** All five headers in the constructor's init, as a record. */
  async "cors-init"(req) {
    await req.arrayBuffer();
    const origin = req.headers.get("origin") ?? "";
    return new Response(QUEUED, {
      status: 200,
      headers: { ...JSON_TYPE, ...corsRecord(origin) },
    });
  },
  /** All five headers in the init, as an array of pairs. */
  async "cors-array"(req) {
    await req.arrayBuffer();
    const origin = req.headers.get("origin") ?? "";
    return new Response(QUEUED, {
      status: 200,
      headers: [
        ["Content-Type", "application/json"],
        ["Access-Control-Allow-Origin", origin],
        ["Access-Control-Allow-Credentials", "true"],
        ["Vary", "Origin"],
        ["Access-Control-Expose-Headers", EXPOSED],
      ],
    });
  },
  /** The array of pairs built once per origin and reused. */
  async "cors-array-cached"(req) {
    await req.arrayBuffer();
    const origin = req.headers.get("origin") ?? "";
    let pairs = pairsByOrigin.get(origin);
    if (pairs === undefined) {
      pairs = [
        ["Content-Type", "application/json"],
        ...Object.entries(corsRecord(origin)),
      ];
      pairsByOrigin.set(origin, pairs);
    }
    return new Response(QUEUED, { status: 200, headers: pairs });
  },
  /** A whole init with a `Headers` object, built once per origin. */
  async "cors-headers-cached"(req) {
    await req.arrayBuffer();
    const origin = req.headers.get("origin") ?? "";
    let init = initByOrigin.get(origin);
    if (init === undefined) {
      init = {
        status: 200,
        headers: new Headers({ ...JSON_TYPE, ...corsRecord(origin) }),
      };
      initByOrigin.set(origin, init);
    }
    return new Response(QUEUED, init);
  },
  /** A response built once per origin, cloned for each answer. */
  async "cors-clone"(req) {
    await req.arrayBuffer();
    const origin = req.headers.get("origin") ?? "";
    let template = templateByOrigin.get(origin);
    if (template === undefined) {
      template = new Response(QUEUED, {
        status: 200,
        headers: { ...JSON_TYPE, ...corsRecord(origin) },
      });
      templateByOrigin.set(origin, template);
    }
    return template.clone();
  },
  /** The body read through its stream object, as `readBody` did. */
  async "body-stream"(req) {
    if (req.body === null) throw new Error("Cannot read a missing body");
    await req.arrayBuffer();
    return new Response(QUEUED, { status: 200, headers: JSON_TYPE });
  },
  /** Six request headers read, as the route reads them. */
  async headers(req) {
    const h = req.headers;
    for (
      const name of [
        "content-type",
        "content-encoding",
        "content-length",
        "origin",
        "signature",
        "x-forwarded-for",
      ]
    ) h.get(name);
    await req.arrayBuffer();
    return new Response(QUEUED, { status: 200, headers: JSON_TYPE });
  },
  /** Hono routing with a plain answer, to price the framework alone. */
  hono: honoVariant(),
};

function honoVariant(): (req: Request) => Promise<Response> {
  const app = new Hono();
  app.post("/api/v1/logs", async (c) => {
    await c.req.raw.arrayBuffer();
    return new Response(QUEUED, { status: 200, headers: JSON_TYPE });
  });
  return async (req) => await app.fetch(req);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      variant: { type: "string", default: "plain" },
      port: { type: "string", default: "8002" },
      hostname: { type: "string", default: "127.0.0.1" },
    },
  });
  const handler = VARIANTS[values.variant];
  if (handler === undefined) {
    console.error(
      `Cannot find variant "${values.variant}": expected one of ${
        Object.keys(VARIANTS).join(", ")
      }`,
    );
    Deno.exit(2);
  }
  Deno.serve({
    port: Number(values.port),
    hostname: values.hostname,
    onListen: ({ hostname, port }) =>
      console.log(
        `Variant ${values.variant} listening on http://${hostname}:${port}/`,
      ),
  }, handler);
}
