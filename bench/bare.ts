/**
 * The "bare" server of the ingestion benchmark: a `Deno.serve` handler that
 * reads the request body and answers `200 {"status":"queued"}`, the same
 * answer as the service, with no other work. It measures the runtime's
 * ceiling on this machine, so that `bench/ingest.ts` can report the service
 * as a fraction of it.
 *
 * It must not parse, validate or store anything: every cost added here would
 * flatter the service.
 *
 * ```sh
 * deno run --allow-net bench/bare.ts --port 8001 --hostname 127.0.0.1
 * ```
 *
 * @module
 */
import { parseArgs } from "node:util";

const QUEUED = '{"status":"queued"}';

/** Reads the body and answers like the service does when it accepts an entry. */
async function handleBare(req: Request): Promise<Response> {
  await req.arrayBuffer();
  return new Response(QUEUED, {
    status: 200,
    headers: { "Content-Type": "application/json" },
  });
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      port: { type: "string", default: "8001" },
      hostname: { type: "string", default: "127.0.0.1" },
    },
  });
  Deno.serve({
    port: Number(values.port),
    hostname: values.hostname,
    onListen: ({ hostname, port }) =>
      console.log(`Bare server listening on http://${hostname}:${port}/`),
  }, handleBare);
}
