#!/usr/bin/env bash
# A client test suite against mediagen-emulator with bash and curl (and jq, or python3 when jq
# is missing, to read JSON; MEDIAGEN_JSON=python3 chooses python3 anyway).
#
# It starts the built emulator as a subprocess on a free port with a manual clock and a fixed
# seed, reads the address from the first line the emulator prints, and drives the whole flow of a
# Media Generation Service client: catalog, model schema, quote, generation, download, a forced
# failure and an expired quote. Time moves only when the script posts to /_emulator/clock, so
# nothing here sleeps.
#
#   MEDIAGEN_BIN=/path/to/mediagen-emulator bash examples/shell/client-test.sh
#
# Without MEDIAGEN_BIN it uses ./mediagen-emulator at the repository root, or builds it with Go.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
key=mg_test_all # the embedded catalog's key with models:read and generate
account=acct_all
work=$(mktemp -d "${TMPDIR:-/tmp}/mediagen-sh-XXXXXX")
emu_pid=

# cleanup runs on every exit; the emulator is still running here only when the script stopped
# early, so it is killed outright (the normal end stops it gracefully below).
cleanup() {
  if [[ -n $emu_pid ]]; then
    kill -KILL "$emu_pid" 2>/dev/null || true
    wait "$emu_pid" 2>/dev/null || true
  fi
  exec 3<&- 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- JSON: jq when present, else a python3 reader for the same simple paths ------------------

# MEDIAGEN_JSON=python3 forces the fallback (to try it where jq is installed).
if [[ ${MEDIAGEN_JSON:-jq} == jq ]] && command -v jq >/dev/null 2>&1; then
  # jget PATH: print the value at a path such as .data[0].id or .a["b/c"] (strings raw, the
  # rest as compact JSON).
  jget() { jq -c -r "$1"; }
  # jset NAME JSON: the object on stdin with one member set.
  jset() { jq -c --arg k "$1" --argjson v "$2" '.[$k] = $v'; }
  # jaccount ACCOUNT: the account's entry in GET /_emulator/accounts on stdin.
  jaccount() { jq -c --arg a "$1" '.data[] | select(.account == $a)'; }
else
  jget() {
    python3 -c '
import json, re, sys
v = json.load(sys.stdin)
for name, index, key in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[\"([^\"]*)\"\]", sys.argv[1]):
    v = None if v is None else v[int(index)] if index else v.get(name or key)
print(v if isinstance(v, str) else json.dumps(v, separators=(",", ":")))' "$1"
  }
  jset() {
    python3 -c '
import json, sys
v = json.load(sys.stdin); v[sys.argv[1]] = json.loads(sys.argv[2])
print(json.dumps(v, separators=(",", ":")))' "$1" "$2"
  }
  jaccount() {
    python3 -c '
import json, sys
print(json.dumps(next(b for b in json.load(sys.stdin)["data"] if b["account"] == sys.argv[1]), separators=(",", ":")))' "$1"
  }
fi

# --- HTTP --------------------------------------------------------------------------------------

# call METHOD PATH [BODY] [HEADER...]: sets $status, $body and $headers (a file).
call() {
  local method=$1 path=$2 data=${3:-}
  shift 3 2>/dev/null || shift $#
  local args=(-s -X "$method" -H "Authorization: Bearer $key" -D "$work/headers" -o "$work/body" -w '%{http_code}')
  [[ -n $data ]] && args+=(-H 'Content-Type: application/json' --data-binary "$data")
  for h in "$@"; do args+=(-H "$h"); done
  status=$(curl "${args[@]}" "$base$path")
  body=$(cat "$work/body")
  headers="$work/headers"
}

# header NAME: a header of the last answer.
header() { grep -i "^$1:" "$headers" | head -n1 | cut -d: -f2- | tr -d ' \r'; }

# control METHOD PATH [BODY]: calls the control API, which must answer 2xx; prints the body.
control() {
  local out code
  out=$(curl -s -X "$1" -H 'Content-Type: application/json' ${3:+--data-binary "$3"} -w '\n%{http_code}' "$base$2")
  code=${out##*$'\n'}
  if [[ $code != 2* ]]; then
    echo "control $1 $2: $out" >&2
    return 1
  fi
  printf '%s' "${out%$'\n'*}"
}

advance() { control POST /_emulator/clock "{\"advance\":\"$1\"}" >/dev/null; }
account_json() { control GET /_emulator/accounts | jaccount "$account"; }
balance() { account_json | jget ".$1"; }

# --- assertions --------------------------------------------------------------------------------

passed=0 failed=0 current=
start_test() { current=$1; control POST /_emulator/reset >/dev/null; }
expect() { # expect WHAT GOT WANT
  if [[ $2 == "$3" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: %s = %q, want %q\n' "$current" "$1" "$2" "$3"
    [[ -n ${body:-} ]] && printf '     last body: %.300s\n' "$body"
  fi
}
end_test() { printf 'done %s\n' "$current"; }

# --- start the emulator ------------------------------------------------------------------------

bin=${MEDIAGEN_BIN:-}
if [[ -z $bin ]]; then
  if [[ -x $repo/mediagen-emulator ]]; then
    bin=$repo/mediagen-emulator
  else
    (cd "$repo" && go build -o "$work/mediagen-emulator" .)
    bin=$work/mediagen-emulator
  fi
fi

# The emulator prints "listening on http://HOST:PORT" first, once its port is bound. Reading it
# through a FIFO waits exactly that long; read -t bounds the wait if it never comes.
mkfifo "$work/stdout"
# The emulator reads MEDIAGEN_* variables as flag defaults; unset them so the suite runs the
# same everywhere.
for v in $(compgen -e | grep '^MEDIAGEN_' || true); do unset "$v"; done
"$bin" --addr 127.0.0.1:0 --clock manual --seed 42 >"$work/stdout" 2>"$work/emulator.log" &
emu_pid=$!
exec 3<"$work/stdout"
if ! read -r -t 15 line <&3 || [[ $line != "listening on http://"* ]]; then
  echo "emulator did not start: ${line:-}" >&2
  cat "$work/emulator.log" >&2
  exit 1
fi
base=${line#listening on }
echo "emulator at $base"

# --- tests -------------------------------------------------------------------------------------

start_test "catalog lists models, each with an OpenAPI schema"
call GET "/v1/models?category=text-to-image&limit=5"
expect "GET /v1/models status" "$status" 200
model=$(jget '.data[0].id' <<<"$body")
expect "output_type" "$(jget '.data[0].output_type' <<<"$body")" image
call GET "/v1/models/$model" # the id is used as-is, slashes included
expect "GET /v1/models/$model status" "$status" 200
expect "OpenAPI version" "$(jget '.openapi.openapi' <<<"$body")" 3.1.0
schema=$(jget ".openapi.paths[\"/$model\"].post.requestBody.content[\"application/json\"].schema" <<<"$body")
expect "schema type" "$(jget '.type' <<<"$schema")" object
end_test

start_test "quote, generate and download a PNG"
input=$(jget '.examples[0]' <<<"$schema")
if [[ $(jget '.properties.output_format.enum' <<<"$schema") == *'"png"'* ]]; then
  input=$(jset output_format '"png"' <<<"$input")
fi
call POST /v1/quotes "{\"model\":\"$model\",\"input\":$input}"
expect "quote status" "$status" 200
quote_id=$(jget '.quote_id' <<<"$body")
credits=$(jget '.credits' <<<"$body")
call POST /v1/generate "{\"model\":\"$model\",\"input\":$input,\"quote_id\":\"$quote_id\"}" "Idempotency-Key: order-1"
expect "generate status" "$status" 202
expect "job status" "$(jget '.status' <<<"$body")" queued
location=$(header Location)
advance 1m # the manual clock stands still: move it past the job's run time, then look once
call GET "$location"
expect "job status after 1m" "$(jget '.status' <<<"$body")" succeeded
expect "credit_status" "$(jget '.credit_status' <<<"$body")" charged
url=$(jget '.outputs[0].url' <<<"$body")
size=$(jget '.outputs[0].size_bytes' <<<"$body")
got=$(curl -s -o "$work/output" -w '%{http_code} %{content_type}' "$url") # outputs need no key
expect "download" "$got" "200 image/png"
expect "PNG signature" "$(head -c 8 "$work/output" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a
expect "size_bytes" "$(wc -c <"$work/output" | tr -d ' ')" "$size"
expect "charged credits" "$(balance charged)" "$credits"
end_test

start_test "wait=true answers with the finished job"
call POST /v1/quotes "{\"model\":\"$model\",\"input\":$input}"
quote_id=$(jget '.quote_id' <<<"$body")
gen="{\"model\":\"$model\",\"input\":$input,\"quote_id\":\"$quote_id\"}"
call POST /v1/generate "$gen" "Idempotency-Key: order-2"
expect "generate status" "$status" 202
job_id=$(jget '.id' <<<"$body")
# Retry it with wait=true (same Idempotency-Key, same job) in the background while the clock
# moves: whether the clock moves before or during the wait, the answer is 200 with the job.
curl -s -o "$work/waited" -w '%{http_code}' -X POST -H "Authorization: Bearer $key" \
  -H 'Content-Type: application/json' -H 'Idempotency-Key: order-2' --data-binary "$gen" \
  "$base/v1/generate?wait=true" >"$work/waited.status" &
waiter=$!
advance 1m
wait "$waiter"
expect "wait=true status" "$(cat "$work/waited.status")" 200
expect "wait=true job" "$(jget '.id' <"$work/waited")" "$job_id"
expect "wait=true job status" "$(jget '.status' <"$work/waited")" succeeded
end_test

for how in header token; do
  start_test "a failure forced by the $how refunds the credits"
  before_available=$(balance available) before_refunded=$(balance refunded)
  if [[ $how == header ]]; then
    fail_input='{"prompt":"a red fox"}' outcome=("X-Emulator-Outcome: fail")
  else
    fail_input='{"prompt":"a red fox [emulator:fail]"}' outcome=()
  fi
  call POST /v1/quotes "{\"model\":\"$model\",\"input\":$fail_input}"
  quote_id=$(jget '.quote_id' <<<"$body")
  credits=$(jget '.credits' <<<"$body")
  call POST /v1/generate "{\"model\":\"$model\",\"input\":$fail_input,\"quote_id\":\"$quote_id\"}" "Idempotency-Key: fail-1" "${outcome[@]}"
  expect "generate status" "$status" 202
  job_id=$(jget '.id' <<<"$body")
  expect "held credits" "$(balance held)" "$credits"
  advance 1m
  call GET "/v1/jobs/$job_id"
  expect "job status" "$(jget '.status' <<<"$body")" failed
  expect "error code" "$(jget '.error.code' <<<"$body")" generation_failed
  expect "credit_status" "$(jget '.credit_status' <<<"$body")" refunded
  expect "available credits" "$(balance available)" "$before_available"
  expect "refunded credits" "$(balance refunded)" "$((before_refunded + credits))"
  end_test
done

start_test "a quote expires on the manual clock"
call POST /v1/quotes "{\"model\":\"$model\",\"input\":{\"prompt\":\"a red fox\"}}"
quote_id=$(jget '.quote_id' <<<"$body")
advance 10m1s # quotes live 10 minutes
call POST /v1/generate "{\"model\":\"$model\",\"input\":{\"prompt\":\"a red fox\"},\"quote_id\":\"$quote_id\"}" "Idempotency-Key: late"
expect "generate status" "$status" 422
expect "Content-Type" "$(header Content-Type)" application/problem+json
expect "problem code" "$(jget '.code' <<<"$body")" quote_expired
expect "held credits" "$(balance held)" 0
end_test

# --- stop the emulator: SIGTERM is a graceful shutdown, exit status 0 --------------------------

kill -TERM "$emu_pid"
# Its standard output reaches end of file when it exits; read -t bounds the wait.
while true; do read -r -t 15 -u 3 _ || { eof=$?; break; }; done
if ((eof > 128)); then
  echo "emulator still running 15 s after SIGTERM; killing it" >&2
  kill -KILL "$emu_pid"
fi
code=0
wait "$emu_pid" || code=$?
emu_pid=
current="shutdown"
expect "emulator exit status after SIGTERM" "$code" 0

echo "shell suite: $passed checks passed, $failed failed"
[[ $failed -eq 0 ]]
