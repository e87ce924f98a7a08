#!/usr/bin/env bash
# Builds mediagen-emulator once and runs every example client suite against it: Python, Node and
# shell. Prints a summary; exits non-zero when any suite fails.
#
#   bash examples/run.sh
#
# A suite whose interpreter is missing (python3, node) is reported as skipped.
set -uo pipefail
export LC_NUMERIC=C # a decimal point in $EPOCHREALTIME, for the timings

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bindir=$(mktemp -d "${TMPDIR:-/tmp}/mediagen-examples-XXXXXX")
trap 'rm -rf "$bindir"' EXIT

echo "==> building mediagen-emulator"
if ! (cd "$repo" && go build -o "$bindir/mediagen-emulator" .); then
  echo "build failed" >&2
  exit 1
fi
export MEDIAGEN_BIN=$bindir/mediagen-emulator
"$MEDIAGEN_BIN" version

names=() results=() times=()
status=0

# suite NAME TOOL COMMAND...: runs one suite from the repository root when TOOL is installed.
suite() {
  local name=$1 tool=$2
  shift 2
  echo
  echo "==> $name: $*"
  if ! command -v "$tool" >/dev/null 2>&1; then
    names+=("$name") results+=("skipped ($tool not installed)") times+=("-")
    return
  fi
  local start=${EPOCHREALTIME:-$SECONDS}
  if (cd "$repo" && "$@"); then
    results+=("passed")
  else
    results+=("FAILED")
    status=1
  fi
  names+=("$name") times+=("$(awk -v a="$start" -v b="${EPOCHREALTIME:-$SECONDS}" 'BEGIN { printf "%.1fs", b - a }')")
}

suite python python3 python3 -m unittest discover -s examples/python -v
suite node node node --test examples/node/client.test.mjs
suite shell curl bash examples/shell/client-test.sh

echo
echo "==> summary"
for i in "${!names[@]}"; do
  printf '  %-8s %-32s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
done
exit $status
