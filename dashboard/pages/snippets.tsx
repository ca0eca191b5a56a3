/**
 * "Send your first entry": ready-to-paste snippets with the project's id and
 * the service's endpoint filled in — curl as a browser origin would send,
 * JavaScript for a web page on an allowed origin, and a signed server call.
 * Secrets are never filled in: the signed call reads `SECRET` from the
 * environment.
 *
 * @module
 */
import { CopyButton } from "./layout.tsx";

/** Props of {@linkcode Snippets}. */
export interface SnippetsProps {
  projectId: string;
  /** `…/api/v1/logs` of the service. */
  endpoint: string;
  /** An allowed browser origin to show in the curl example, if any. */
  origin?: string;
}

/** Quotes `text` for a POSIX shell (single quotes). */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'"'"'`)}'`;
}

/** The three snippets as text, for tests and for the page. */
export function snippetTexts(props: SnippetsProps): {
  curl: string;
  browser: string;
  signed: string;
} {
  const { projectId, endpoint } = props;
  const origin = props.origin ?? "https://your-site.example";
  const body = JSON.stringify({
    level: "info",
    projectId,
    data: { title: "Hello from curl" },
    context: { environment: "development" },
  });
  const curl = [
    `curl -sS ${shellQuote(endpoint)} \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -H ${shellQuote(`Origin: ${origin}`)} \\`,
    `  --data ${shellQuote(body)}`,
  ].join("\n");
  const browser = [
    `// In a page served from an allowed origin:`,
    `fetch(${JSON.stringify(endpoint)}, {`,
    `  method: "POST",`,
    `  headers: { "Content-Type": "application/json" },`,
    `  body: JSON.stringify({`,
    `    level: "info",`,
    `    projectId: ${JSON.stringify(projectId)},`,
    `    data: { title: "Page loaded", path: location.pathname },`,
    `    device: { userAgent: navigator.userAgent, url: location.origin + location.pathname },`,
    `  }),`,
    `});`,
    ``,
    `// When the page is closing, a beacon still gets through:`,
    `navigator.sendBeacon(${JSON.stringify(endpoint)}, JSON.stringify({`,
    `  level: "info", projectId: ${
      JSON.stringify(projectId)
    }, data: { title: "Page closed" },`,
    `}));`,
  ].join("\n");
  const signedBody = JSON.stringify({
    level: "error",
    projectId,
    device: { host: "api-1" },
    context: { environment: "production" },
    data: { title: "Payment failed", orderId: 1234 },
  });
  const signed = [
    `# The secret stays on the server: export SECRET=... first.`,
    `PROJECT_ID=${shellQuote(projectId)}`,
    `TIMESTAMP=$(( $(date +%s) * 1000 ))`,
    `# Members in this order, compact JSON: level, projectId, device, context, data.`,
    `BODY=${shellQuote(signedBody)}`,
    `SIGNATURE=$(printf '%s' "$PROJECT_ID$BODY$TIMESTAMP" \\`,
    `  | openssl dgst -sha256 -hmac "$SECRET" \\`,
    `  | awk '{print $NF}' | tr '[:lower:]' '[:upper:]')`,
    `curl -sS ${shellQuote(endpoint)} \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -H "timestamp: $TIMESTAMP" \\`,
    `  -H "signature: $SIGNATURE" \\`,
    `  --data "$BODY"`,
  ].join("\n");
  return { curl, browser, signed };
}

/** The snippets section. */
export function Snippets(props: SnippetsProps) {
  const texts = snippetTexts(props);
  const items = [
    {
      id: "snippet-curl",
      title: "curl, as a browser on an allowed origin",
      text: texts.curl,
      note: props.origin
        ? `Sent with the Origin header of ${props.origin}, which this project allows.`
        : "Allow the origin first (above), or the entry is refused as bad_origin.",
    },
    {
      id: "snippet-browser",
      title: "JavaScript in a web page",
      text: texts.browser,
      note:
        "The browser sends the Origin header itself; the page's origin must be allowed.",
    },
    {
      id: "snippet-signed",
      title: "Signed server call (shell with openssl)",
      text: texts.signed,
      note:
        "HMAC-SHA256 of projectId + body + timestamp with the project secret, upper-case hex.",
    },
  ];
  return (
    <div class="snippets">
      {items.map((item) => (
        <div class="snippet">
          <div class="snippet-head">
            <h3>{item.title}</h3>
            <CopyButton target={item.id} />
          </div>
          <pre id={item.id}><code>{item.text}</code></pre>
          <p class="hint">{item.note}</p>
        </div>
      ))}
    </div>
  );
}
