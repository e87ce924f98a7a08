#!/usr/bin/env bash
# Runs the test-runner recipes the guides show, from their files under examples/, as written:
# Jest (native ES modules, and the usual ts-jest setup on CommonJS), Vitest with
# test.concurrent, node's runner, a whole flow typed by openapi-typescript under tsc --strict,
# the TypeScript example client (examples/typescript), explore's TypeScript adapter
# (examples/explore), pytest with and without xdist; and lints
# the GitHub Actions workflows and actions.
#
#   bash examples/recipes.sh
#
# Needs go, node 20+ with npm (the runners, pinned in examples/node-recipes/package-lock.json,
# are installed into examples/node-recipes/node_modules, which git ignores), and a python3
# with pytest and pytest-xdist (Debian's python3-pytest and python3-pytest-xdist) and venv.
# Uses $MEDIAGEN_EMULATOR_BIN when set, else builds the binary. Prints each step's time.
set -euo pipefail
export LC_NUMERIC=C # a decimal point in $EPOCHREALTIME

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
recipes=$repo/examples/node-recipes
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mediagen-recipes-XXXXXX")
trap 'rm -rf "$tmp" "$recipes/typed-flow/out" "$recipes/typed-flow/openapi.d.ts" "$recipes/first-test/first.test.ts"' EXIT

ACTIONLINT=github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

began=$EPOCHREALTIME
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }'; }
# step NAME COMMAND...: runs one step from the repository root and prints its time.
step() {
  local name=$1 start=$EPOCHREALTIME
  shift
  printf '\n==> %s\n' "$name"
  (cd "$repo" && "$@")
  printf '    %s: passed in %s\n' "$name" "$(since "$start")"
}

if [[ -z ${MEDIAGEN_EMULATOR_BIN:-} ]]; then
  (cd "$repo" && go build -o "$tmp/mediagen-emulator" .)
  export MEDIAGEN_EMULATOR_BIN=$tmp/mediagen-emulator
fi
unset MEDIAGEN_EMULATOR_URL MEDIAGEN_ADMIN_TOKEN

# The runners, once per lock file; then the helper package as npm packs it (so a file left out
# of its "files" fails here), unpacked where an install puts it.
install_node() {
  local stamp=$recipes/node_modules/.lock-sha256 want
  want=$(sha256sum "$recipes/package-lock.json" | cut -d' ' -f1)
  if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    (cd "$recipes" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
  fi
  local tgz
  tgz=$(cd "$repo/clients/node" && npm pack --silent --pack-destination "$tmp")
  rm -rf "$recipes/node_modules/@mediagen/emulator-testing"
  mkdir -p "$recipes/node_modules/@mediagen/emulator-testing"
  tar -xzf "$tmp/$tgz" -C "$recipes/node_modules/@mediagen/emulator-testing" --strip-components=1
}

# The helper's CommonJS entry is what tsc makes of its ES modules.
check_cjs() {
  "$recipes/node_modules/.bin/tsc" --allowJs --module commonjs --moduleResolution node10 --target es2022 \
    --skipLibCheck --types node --typeRoots "$recipes/node_modules/@types" --outDir "$tmp/cjs" clients/node/index.js clients/node/jest-reporter.js
  # import.meta is a syntax error in CommonJS; there the module's own URL comes from __filename.
  sed -i 's/import\.meta\.url/require("node:url").pathToFileURL(__filename).href/g' "$tmp/cjs/"*.js
  cp clients/node/cjs/package.json "$tmp/cjs/"
  diff -r clients/node/cjs "$tmp/cjs" >&2 || {
    echo "clients/node/cjs is not what tsc makes of the ES modules; run: bash examples/recipes.sh --write-cjs" >&2
    return 1
  }
}

if [[ ${1:-} == --write-cjs ]]; then
  install_node
  check_cjs 2>/dev/null || true
  cp "$tmp/cjs/"*.js "$repo/clients/node/cjs/"
  echo "wrote clients/node/cjs"
  exit 0
fi

pytest_recipe() {
  local py=
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import pytest, xdist, venv' >/dev/null 2>&1; then
      py=$(command -v "$candidate")
      break
    fi
  done
  [[ -n $py ]] || { echo "no python3 with pytest, pytest-xdist and venv" >&2; return 1; }
  "$py" -m venv --system-site-packages "$tmp/venv"
  cp -r clients/python "$tmp/python-package" # a build leaves build/ and *.egg-info beside the sources
  "$tmp/venv/bin/pip" install -q --no-build-isolation --no-index "$tmp/python-package"
  PATH=$tmp/venv/bin:$PATH PYTEST_ADDOPTS="-p no:cacheprovider" bash examples/pytest/run.sh
}

step "node runners (npm ci, the helper packed)" install_node
step "CommonJS entry up to date" check_cjs
step "node:test" bash -c 'cd examples/node-recipes && node --test node-test/'
step "Jest, native ES modules" bash -c 'cd examples/node-recipes/jest-esm && NODE_OPTIONS=--experimental-vm-modules npx jest'
step "Jest, ts-jest on CommonJS" bash -c 'cd examples/node-recipes/jest-ts && npx jest'
# With the onTestFinished imported from vitest instead of the context's, this fails every run:
# the shortest test finishes first and deletes the tenants of the others.
step "Vitest, test.concurrent" bash -c 'cd examples/node-recipes/vitest && npx vitest run'
step "openapi-typescript and a typed flow under tsc --strict" bash -c '
  cd examples/node-recipes/typed-flow
  npx openapi-typescript ../../../docs/openapi.json -o openapi.d.ts --silent
  npx tsc -p . --outDir out
  node out/flow.mjs'
# Every TypeScript recipe under tsc --strict --noEmit, with the TypeScript the recipes pin (the
# ts-jest recipe needs one below 7) and with the current major: Vitest and Jest run TypeScript
# without checking its types, so a recipe that runs green may still not compile for a user.
# The README's first test too, in first-test/ with the tsconfig the README shows (strict, and
# noUncheckedIndexedAccess, as tsc --init writes it).
typecheck() {
  local tsc
  awk '/<!-- first-test typescript: first.test.ts -->/ { f = 1; next } f && !p && /^```/ { p = 1; next } p && /^```$/ { exit } p' \
    README.md >"$recipes/first-test/first.test.ts"
  [[ -s $recipes/first-test/first.test.ts ]] || { echo "README.md has no block marked <!-- first-test typescript: first.test.ts -->" >&2; return 1; }
  for tsc in typescript typescript-current; do
    tsc=examples/node-recipes/node_modules/$tsc/bin/tsc
    echo "    $(node "$tsc" --version)"
    for project in examples/node-recipes/vitest examples/node-recipes/jest-ts examples/node-recipes/typed-flow examples/typescript examples/explore examples/node-recipes/first-test; do
      node "$tsc" -p "$project" --strict --noEmit
    done
  done
}
step "every TypeScript recipe and the README's first test under tsc --strict --noEmit (the pinned TypeScript and the current major)" typecheck
step "TypeScript example: a sloppy and a careful client, judged by the emulator's report" bash -c '
  out=examples/node-recipes/node_modules/.typescript-example
  rm -rf "$out"
  examples/node-recipes/node_modules/.bin/tsc -p examples/typescript --outDir "$out"
  node --test "$out"/*.test.mjs'
step "explore's TypeScript adapter: a careful client as conformance and explore run it" bash -c '
  out=examples/node-recipes/node_modules/.explore-example
  rm -rf "$out"
  examples/node-recipes/node_modules/.bin/tsc -p examples/explore --outDir "$out"
  node --test "$out"/*.test.mjs'
step "pytest with python -m pytest, with and without xdist" pytest_recipe
step "actionlint" go run "$ACTIONLINT" -shellcheck= -pyflakes= .github/workflows/*.yml examples/ci/*.yml

printf '\n==> recipes: all passed in %s\n' "$(since "$began")"
