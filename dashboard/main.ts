/**
 * `deno task dashboard`: reads the dashboard's configuration, opens the
 * service's KV and serves the dashboard on `DASHBOARD_HOSTNAME`:
 * `DASHBOARD_PORT` (127.0.0.1:8001). Without `ADMIN_PASSWORD`, or when that
 * address cannot be listened on (a port taken), it prints one line saying so
 * and exits. Wiring only.
 *
 * @module
 */
import { loadConfig } from "../config.ts";
import { openKv } from "../db/open.ts";
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
  try {
    config = loadDashboardConfig(env);
  } catch (error) {
    if (!(error instanceof DashboardConfigError)) throw error;
    console.error(error.message);
    Deno.exit(1);
  }
  const kv = await openKv(config.kvPath);
  const servicePort = config.servicePort;
  // Searches read in a thread of their own, as in the service
  // (docs/query.md#a-thread-of-its-own): one reader's never holds the pages.
  const queryThread = queryThreadOf(
    kv,
    config.kvPath,
    loadConfig(env).queryThread,
  );
  const app = createDashboard({
    kv,
    ...(queryThread ? { reads: queryThread } : {}),
    password: config.password,
    ...dashboardBounds(config),
    trustProxy: loadConfig(env).trustProxy,
    allowPrivateTargets: loadConfig(env).alertPrivateTargets,
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
