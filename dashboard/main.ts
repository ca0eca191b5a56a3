/**
 * `deno task dashboard`: reads the dashboard's configuration, opens the
 * service's KV and serves the dashboard on `DASHBOARD_HOSTNAME`:
 * `DASHBOARD_PORT` (127.0.0.1:8001). Without `ADMIN_PASSWORD`, or when that
 * address cannot be listened on (a port taken), it prints one line saying so
 * and exits. Wiring only.
 *
 * @module
 */
import { ConfigError, loadConfig } from "../config.ts";
import { openKv } from "../db/open.ts";
import { errorLine } from "../db/locked.ts";
import { queryThreadOf } from "../db/query/thread.ts";
import { listenOrExit, onStopSignals } from "../server/serve.ts";
import { createDashboard } from "./app.ts";
import {
  dashboardBounds,
  DashboardConfigError,
  loadDashboardConfig,
} from "./config.ts";

if (import.meta.main) {
  const env = Deno.env.toObject();
  let config;
  let service;
  try {
    config = loadDashboardConfig(env);
    service = loadConfig(env);
  } catch (error) {
    if (
      !(error instanceof DashboardConfigError || error instanceof ConfigError)
    ) {
      throw error;
    }
    console.error(error.message);
    Deno.exit(1);
  }
  // One line, as the service says it: a path that is no database.
  const kv = await openKv(config.kvPath).catch((error) => {
    console.error(error instanceof Error ? error.message : String(error));
    Deno.exit(1);
  });
  const servicePort = config.servicePort;
  // Searches read in a thread of their own, as in the service
  // (docs/query.md#a-thread-of-its-own): one reader's never holds the pages.
  const queryThread = queryThreadOf(kv, config.kvPath, service.queryThread);
  const app = createDashboard({
    kv,
    ...(queryThread ? { reads: queryThread } : {}),
    password: config.password,
    ...dashboardBounds(config),
    trustProxy: service.trustProxy,
    allowPrivateTargets: service.alertPrivateTargets,
    endpoint: (url) => {
      const service = new URL(url.origin);
      service.port = String(servicePort);
      return `${service.origin}/api/v1/logs`;
    },
  });
  const server = listenOrExit(config.hostname, config.port, () =>
    Deno.serve(
      {
        port: config.port,
        hostname: config.hostname,
        onListen: ({ hostname, port }) =>
          console.log(`Dashboard on http://${hostname}:${port}/`),
        // What escapes the app (a live tail cut for a reader that stopped
        // reading): one line, not the runtime's stack trace.
        onError: (error) => {
          console.error("Dashboard:", errorLine(error));
          return new Response(null, { status: 500 });
        },
      },
      (req, info) =>
        app.fetch(req, { remoteAddr: info.remoteAddr as Deno.NetAddr }),
    ));
  const shutdown = async () => {
    await server.shutdown();
    await queryThread?.stop();
    kv.close();
    Deno.exit(0);
  };
  onStopSignals(shutdown);
}
