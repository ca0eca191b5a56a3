#!/usr/bin/env bash
# The Deno Deploy flow across runtime versions: a project created by the
# operator command under this repository's Deno, the server (main.ts)
# started under the Deno version Deno Deploy runs, one entry posted to it,
# stored, and read back by the operator command. It fails when either
# version cannot read what the other wrote (docs/design.md#value-encoding).
#
# Usage: bash .ci/deploy_smoke.sh   (DEPLOY_DENO_VERSION, default 2.5.0)
set -euo pipefail
cd "$(dirname "$0")/.."
version="${DEPLOY_DENO_VERSION:-2.5.0}"
work="$(mktemp -d)"
server=""
cleanup() {
  # The server runs in its own process group (npx, node and deno): end all.
  if [ -n "$server" ]; then kill -- "-$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
export KV_PATH="$work/kv.sqlite"
export NO_COLOR=1

old_deno() { npx -y "deno@$version" "$@"; }
echo "deploy smoke: server under Deno $(old_deno --version | head -n 1)"

project="$(deno task -q project create --name deploy-smoke \
  --allow https://smoke.example.com --json)"
id="$(printf '%s' "$project" | deno eval \
  'console.log(JSON.parse(await new Response(Deno.stdin.readable).text()).projectId)')"

port="$(deno eval 'const l = Deno.listen({ port: 0 }); console.log(l.addr.port); l.close()')"
# Deno Deploy runs with every permission and no queues.
PORT="$port" HOSTNAME=127.0.0.1 QUEUE=off \
  setsid npx -y "deno@$version" run --allow-all main.ts >"$work/server.log" 2>&1 &
server=$!

for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$port/"; then break; fi
  sleep 0.2
done

answer="$(curl -s -w ' %{http_code}' -X POST "http://127.0.0.1:$port/api/v1/logs" \
  -H 'Content-Type: application/json' -H 'Origin: https://smoke.example.com' \
  --data "{\"level\":\"info\",\"projectId\":\"$id\",\"data\":{\"title\":\"deploy smoke\"}}")"
echo "POST answered: $answer"
[ "$answer" = '{"status":"queued"} 200' ]

for _ in $(seq 1 50); do
  stored="$(deno task -q logs "$id" --json)"
  if printf '%s' "$stored" | grep -q '"title":"deploy smoke"'; then
    echo "stored and read back: $stored"
    if grep -q "Error" "$work/server.log"; then
      echo "the server logged an error:" >&2
      cat "$work/server.log" >&2
      exit 1
    fi
    exit 0
  fi
  sleep 0.2
done
echo "the entry was not stored; server log:" >&2
cat "$work/server.log" >&2
exit 1
