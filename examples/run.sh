#!/usr/bin/env bash
# Builds mediagen-emulator once and runs, against it, the tests of the client packages
# (clients/python, clients/node) and every example suite (Python, explore, Node, shell): serially, in
# parallel with a tenant per test on one shared emulator, and attached to an emulator by URL.
# Prints a summary; exits non-zero when any suite fails.
#
#   bash examples/run.sh
#
# A suite whose tools are missing (python3 with pytest and pytest-xdist, node, curl) is reported
# as skipped.
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
export MEDIAGEN_EMULATOR_BIN=$bindir/mediagen-emulator # the client packages
export MEDIAGEN_BIN=$MEDIAGEN_EMULATOR_BIN             # the shell suite
unset MEDIAGEN_EMULATOR_URL
"$MEDIAGEN_BIN" version

# A python3 with pytest and pytest-xdist: Debian's (python3-pytest, python3-pytest-xdist) when
# the first python3 on PATH lacks them.
py=
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import pytest, xdist' >/dev/null 2>&1; then
    py=$(command -v "$candidate")
    break
  fi
done
pytest_py=${py:-python3-with-pytest-and-xdist}
# Straight from the checkout: the plugin by -p, the package on PYTHONPATH.
pyt=(env "PYTHONPATH=$repo/clients/python/src" "$pytest_py" -m pytest -p mediagen_emulator.pytest_plugin -p no:cacheprovider -q)

names=() results=() times=()
status=0

# suite NAME TOOL COMMAND...: runs one suite from the repository root when TOOL is installed.
suite() {
  local name=$1 tool=$2
  shift 2
  echo
  echo "==> $name: $*"
  if ! command -v "$tool" >/dev/null 2>&1; then
    names+=("$name") results+=("skipped (${tool##*/} not installed)") times+=("-")
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

# pytest's exit status 5 (no tests collected) counts as a failure: every run here has tests.
suite python-package "$pytest_py" "${pyt[@]}" clients/python/tests
suite python-xdist "$pytest_py" "${pyt[@]}" -n 4 --mediagen-shared clients/python/tests/test_tenants.py clients/python/tests/test_control.py clients/python/tests/test_verify.py
suite python-attached "$pytest_py" env "PYTHONPATH=$repo/clients/python/src" "$pytest_py" -m mediagen_emulator -- \
  "${pyt[@]}" -n 4 clients/python/tests/test_tenants.py examples/python
# The explore examples: the careful and buggy clients as explore and conformance run them.
suite python-explore "$pytest_py" "${pyt[@]}" -n 2 examples/explore
suite python-installed "$pytest_py" bash -c '
  set -e
  venv=$(mktemp -d)
  trap "rm -rf \"$venv\"" EXIT
  "$1" -m venv --system-site-packages "$venv"
  cp -r clients/python "$venv/pkg" # a build leaves build/ and *.egg-info beside the sources
  "$venv/bin/pip" install -q --no-build-isolation --no-index "$venv/pkg"
  cd examples/python # away from the checkout: the installed package, its entry point loading the plugin
  "$venv/bin/python" -m pytest -p no:cacheprovider -q -n 2 .
' bash "$pytest_py"
suite node-package node node --test clients/node/test/*.test.js
suite node-attached node node clients/node/bin/run.js -- node --test clients/node/test/tenants.test.js examples/node/client.test.mjs
suite node node node --test examples/node/client.test.mjs
suite shell curl bash examples/shell/client-test.sh

echo
echo "==> summary"
for i in "${!names[@]}"; do
  printf '  %-17s %-40s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
done
exit $status
