#!/usr/bin/env bash
# THE test command (see README): installs the Debian packages the tests need, checks formatting
# and lints, builds everything and runs every test, end-to-end tests with a real Orca included.
#
#   scripts/test.sh [--no-lint] [--no-deps]
#     --no-lint  skip `cargo fmt --check` and `cargo clippy`
#     --no-deps  skip scripts/install-deps.sh
#   NEWTON_E2E_SKIP_ORCA=1  skip (loudly) the Orca tests; NEWTON_E2E_KEEP=1 keeps session dirs.
#   NEWTON_ORCA51_PASS=1  also run the Orca 51.1 pass (not run by default: see below).
#   Under CI (CI set) NEWTON_E2E_SKIP_ORCA and NEWTON_UPDATE_GOLDENS are refused.
#   The test summary (skips, reruns, stale-binary warnings, allow-list counts) is printed last.
#   The Orca tests run side by side: host Orca 43.1 in the workspace's tests, Orca 48.1
#   (scripts/orca-pass.sh) from a Debian 13 root built by scripts/orca-root.sh trixie into
#   target/orca48-root, and, with NEWTON_ORCA51_PASS=1, Orca 51.1 from a Debian unstable root
#   (target/orca51-root: at-spi2-core 2.62, lintian 2.143, always built: the demo runs inside it
#   and its lintian checks the .deb); roots are fresh under CI and built beside the lint and build
#   steps; each pass's time and every step's wall time are in the summary.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${CI:-}" && "${CI}" != "false" ]]; then
  for refused in NEWTON_E2E_SKIP_ORCA NEWTON_UPDATE_GOLDENS; do
    if [[ -n "${!refused:-}" ]]; then
      echo "test.sh: $refused is refused under CI (CI=$CI): CI runs every test and compares every golden" >&2
      exit 2
    fi
  done
fi

lint=1
deps=1
for arg in "$@"; do
  case "$arg" in
    --no-lint) lint=0 ;;
    --no-deps) deps=0 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

start=$SECONDS
# Each step's wall time goes to the summary ("[timing]" lines), so the CI log's end shows where
# the run's minutes went.
step_name=""
step_start=$SECONDS
note_step_time() {
  if [[ -n "$step_name" ]]; then
    echo "[timing] $step_name: $((SECONDS - step_start)) s" >> "$NEWTON_TEST_SUMMARY"
  fi
}
step() {
  note_step_time
  step_name="$*"
  step_start=$SECONDS
  printf '\n==> %s\n' "$*"
}

# Every test appends its skips, reruns, warnings and allow-list counts here (newton_e2e::summary_note);
# printed at the very end, pass or fail, because cargo swallows the stderr of passing tests.
export NEWTON_TEST_SUMMARY="$PWD/target/test-summary.txt"
mkdir -p target
: > "$NEWTON_TEST_SUMMARY"
print_summary() {
  local status=$?
  note_step_time
  local name
  for name in "${!root_pid[@]}"; do
    kill -- "-${root_pid[$name]}" 2>/dev/null || true
    echo "[$name] root build stopped: an earlier step failed" >> "$NEWTON_TEST_SUMMARY"
  done
  for name in "${!pass_pid[@]}"; do
    kill -- "-${pass_pid[$name]}" 2>/dev/null || true
    echo "[$name] the Orca pass was stopped: an earlier step failed (its log: target/$name-pass.log)" >> "$NEWTON_TEST_SUMMARY"
  done
  if [[ -n "${release_pid:-}" ]]; then
    kill -- "-$release_pid" 2>/dev/null || true
    echo "[release checks] stopped: an earlier step failed (their log: ${release_log:-})" >> "$NEWTON_TEST_SUMMARY"
  fi
  printf '\n==> test summary (%s)\n' "$NEWTON_TEST_SUMMARY"
  if [[ -s "$NEWTON_TEST_SUMMARY" ]]; then cat "$NEWTON_TEST_SUMMARY"; else echo "(empty)"; fi
  exit "$status"
}
trap print_summary EXIT

if [[ $deps -eq 1 ]]; then
  step "Debian packages"
  scripts/install-deps.sh
fi

# The Debian roots (scripts/orca-root.sh: debootstrap and packages from the registries, mostly
# network and disk) are built while the workspace is linted and built, and waited for before they
# are used: nothing timing-sensitive runs beside them. trixie holds Orca 48.1 and at-spi2-core
# 2.56 (the second Orca pass); sid holds Orca 51.1 and at-spi2-core 2.62 (the demo, the
# harness's private sessions and the package's lintian on Debian unstable).
declare -A root_pid=() root_started=() root_seconds=() pass_pid=() pass_start=()
root_fresh=()
[[ -n "${CI:-}" && "${CI}" != "false" ]] && root_fresh=(--fresh)
start_root() { # NAME SUITE
  root_started[$1]=$SECONDS
  # Its own process group (setsid), so that a failing step can stop all of it.
  setsid scripts/orca-root.sh "${root_fresh[@]}" "$2" "target/$1-root" > "$PWD/target/$1-root.log" 2>&1 &
  root_pid[$1]=$!
}
wait_for_root() { # NAME
  local pid=${root_pid[$1]:-}
  [[ -z "$pid" ]] && return 0
  unset "root_pid[$1]"
  if ! wait "$pid"; then
    cat "target/$1-root.log" >&2
    echo "test.sh: building the $1 root failed (its log is above, and in target/$1-root.log)" >&2
    exit 1
  fi
  root_seconds[$1]=$((SECONDS - root_started[$1]))
  echo "[$1] root ready ${root_seconds[$1]} s after it was started beside the lint and build steps: $(cat "target/$1-root/.newton-orca-root-ready")" \
    | tee -a "$NEWTON_TEST_SUMMARY"
}
if [[ "${NEWTON_E2E_SKIP_ORCA:-}" != "1" ]]; then
  start_root orca48 trixie
fi
start_root orca51 sid

if [[ $lint -eq 1 ]]; then
  if command -v rustup >/dev/null 2>&1; then
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
  fi
  step "cargo fmt --check"
  cargo fmt --all --check
  step "cargo clippy"
  cargo clippy --locked --workspace --all-targets -- -D warnings
fi

step "cargo build --locked --workspace --all-targets"
# Builds newton-atspi-bridge too: the e2e tests run target/<profile>/newton-atspi-bridge.
cargo build --locked --workspace --all-targets

step "cargo build --locked in live-eframe/ (an unmodified eframe app with the accesskit_unix patch)"
# Its own workspace (its [patch.crates-io] line must not reach legacy/'s real accesskit_unix),
# built into the shared target/ (live-eframe/.cargo/config.toml, read from that directory) where
# tests/tests/live_eframe.rs finds target/debug/newton-live-eframe.
(cd live-eframe && cargo build --locked)

# The release-profile checks (scripts/release-checks.sh: fuzz-replay build, vendored offline
# build, .deb and lintian, licence check) build in the background while the tests run: they need
# no test session, and the tests mostly wait on Orca. Lowest CPU and I/O priority (nice 19, idle
# I/O class), so that the processes under test get the CPU whenever they want it; awaited below.
release_log="$PWD/target/release-checks.log"
release_ready="$PWD/target/tmp/release-binary.ready"
mkdir -p target/tmp
rm -f "$release_ready"
NEWTON_RELEASE_BINARY_READY="$release_ready" \
  setsid nice -n 19 ionice -c 3 scripts/release-checks.sh > "$release_log" 2>&1 &
release_pid=$!

step "demo --no-orca inside the Debian unstable root (at-spi2-core 2.62's launcher and registry)"
# The README's first command as a packager on the next Debian would run it: the private session
# must start with that launcher, which takes no --a11y flag (atspi-client/src/private_session.rs).
wait_for_root orca51
demo_out=$(scripts/in-root.sh target/orca51-root target/debug/newton-atspi-bridge demo --no-orca 2>&1) || {
  printf '%s\n' "$demo_out"
  echo "test.sh: the demo did not run inside the Debian unstable root" >&2
  exit 1
}
printf '%s\n' "$demo_out" | head -n 8
grep -q 'this is what an AT sees' <<< "$demo_out" && grep -q 'check box “Enable feature”' <<< "$demo_out" || {
  printf '%s\n' "$demo_out"
  echo "test.sh: the demo inside the Debian unstable root did not show the application to an AT" >&2
  exit 1
}
echo "[orca51] demo --no-orca inside the root: the application shown to an AT" | tee -a "$NEWTON_TEST_SUMMARY"

wait_for_root orca48

# The Orca 48.1 and 51.1 passes (scripts/orca-pass.sh: each root's Orca and at-spi2-core, and the
# release bridge the package ships) run beside the workspace's tests, from the moment the release
# checks have built that binary: each Orca runs in a PID namespace of its own and takes its own
# version's lock, so Orca 43.1's tests, 48.1's and 51.1's overlap, and the minutes all three
# spend waiting on Orca are spent once. Each log is printed when its pass is awaited, below.
start_orca_pass() { # NAME DESCRIPTION
  if [[ "${NEWTON_E2E_SKIP_ORCA:-}" == "1" ]]; then
    echo "[$1] NEWTON_E2E_SKIP_ORCA=1: the $2 pass was SKIPPED" | tee -a "$NEWTON_TEST_SUMMARY"
    return 0
  fi
  pass_start[$1]=$SECONDS
  setsid scripts/orca-pass.sh "$1" "target/$1-root" "$release_ready" "$release_pid" > "$PWD/target/$1-pass.log" 2>&1 &
  pass_pid[$1]=$!
}
await_orca_pass() { # NAME DESCRIPTION
  local pid=${pass_pid[$1]:-} status=0
  [[ -z "$pid" ]] && return 0
  unset "pass_pid[$1]"
  wait "$pid" || status=$?
  cat "target/$1-pass.log"
  if [[ $status -ne 0 ]]; then
    echo "test.sh: the $2 pass failed (its output is above, and in target/$1-pass.log)" >&2
    echo "[$1] the $2 pass FAILED after $((SECONDS - pass_start[$1])) s (its log: target/$1-pass.log)" >> "$NEWTON_TEST_SUMMARY"
    return 1
  fi
  echo "[$1] $(cat "target/$1-root/.newton-orca-root-ready"): root ready after ${root_seconds[$1]:-0} s (beside the build), pass done $((SECONDS - pass_start[$1])) s after it was started beside the workspace's tests" \
    | tee -a "$NEWTON_TEST_SUMMARY"
}
start_orca_pass orca48 "Orca 48.1"
# The 51.1 pass runs only when asked for: in the one full run with all three passes side by side
# (session 25), the CPU they took together made the 43.1 pass's doc-100k parity fail, the debug
# bridge's side not presenting the focus Tab moved to in both runs (docs/compat.md, "Orca 51.1").
# That is the bridge's to fix (issue 31: fewer and cheaper calls per key in large documents);
# until then the pass stays out of CI's default run.
if [[ "${NEWTON_ORCA51_PASS:-}" == "1" ]]; then
  start_orca_pass orca51 "Orca 51.1"
else
  echo "[orca51] the Orca 51.1 pass was NOT RUN (NEWTON_ORCA51_PASS=1 runs it): beside the other passes it loaded the machine until the 43.1 pass's doc-100k parity failed (docs/compat.md, \"Orca 51.1\")" \
    | tee -a "$NEWTON_TEST_SUMMARY"
fi

step "cargo test --locked --workspace"
# The parity test rewrites this table; an old one must not be shown as this run's.
rm -f target/tmp/parity-latency.txt
# --no-fail-fast: report every failing test binary, not just the first.
cargo test --locked --workspace --no-fail-fast

step "at-spi2-core 2.62 (Debian unstable root): private sessions, IsEnabled from AT listeners, the registry's pings"
# The same harness with the root's launcher and registry (TestSession::platform_command): sessions
# start with a launcher that takes no --a11y flag; "no AT, no updates" follows the listeners ATs
# register (lifecycle's updates_wanted_follows_at_presence); every bridged application answers the
# registry's Peer.Ping, a frozen producer's too (atspi_registry_ping). No Orca here.
platform62_start=$SECONDS
NEWTON_ATSPI_ROOT="$PWD/target/orca51-root" cargo test --locked -p newton-e2e --no-fail-fast \
  --test atspi_registry_ping --test lifecycle --test idle
echo "[orca51] at-spi2-core 2.62 platform tests passed in $((SECONDS - platform62_start)) s" | tee -a "$NEWTON_TEST_SUMMARY"

# Awaited before the Orca 48.1 pass, which runs their release binary (they have usually finished
# by then: 14 minutes of background work beside a 22-minute test step in session 20's CI).
step "release checks, built in the background since the build step: fuzz-replay, vendored offline build, .deb and lintian, licence check"
pid=$release_pid
release_pid=""
if ! wait "$pid"; then
  cat "$release_log"
  echo "test.sh: scripts/release-checks.sh failed (its output is above, and in $release_log)" >&2
  exit 1
fi
cat "$release_log"
grep '^\[timing\] release checks' "$release_log" >> "$NEWTON_TEST_SUMMARY" || true

step "the .deb under Debian unstable's lintian (the release checks ran Debian 12's)"
deb=$(ls -t target/debian/newton-atspi-bridge_*.deb | head -n 1)
scripts/lintian-check.sh "$deb" target/orca51-root
echo "[orca51] lintian $(chroot target/orca51-root dpkg-query -W -f='${Version}' lintian): $(basename "$deb") clean" | tee -a "$NEWTON_TEST_SUMMARY"

# Before the Orca passes are awaited: these need the CPU for about a minute, the passes mostly
# wait on Orca, so the minute is spent beside them instead of after them.
step "fuzz harness, stable runner: every input of fuzz/regressions/, then a bounded random run per target"
# Built by scripts/release-checks.sh. A panic or a hang (10 s per input) exits non-zero.
fuzz_seed=$(date +%s)
# Iterations sized to a few seconds each: 18 s wall, 8 s CPU for all three (fuzz/README.md, "In CI").
for run in decode_validate_apply:20000 protocol_session:10000 atspi_calls:1000; do
  target=${run%%:*} iterations=${run##*:}
  inputs=()
  [[ -d fuzz/regressions/$target ]] && inputs+=("fuzz/regressions/$target")
  [[ $target == decode_validate_apply ]] && inputs+=(fixtures/malformed)
  target/release/fuzz-replay --target "$target" --iterations "$iterations" --seed "$fuzz_seed" "${inputs[@]}" \
    | tail -n 1 | sed "s/^/[fuzz] seed $fuzz_seed: /" | tee -a "$NEWTON_TEST_SUMMARY"
done

step "benchmark suite, smoke mode (tiny trees; fails only if a benchmark cannot run, never on speed)"
# Debug binaries from the build above; the full suite is scripts/bench.sh (docs/benchmarks.md).
target/debug/newton-bench --smoke --out target/bench-smoke

step "memory after applications leave: 3 rounds of 10 apps x 5,000 nodes (fails over 2x the start RSS)"
# Issue 14's bound as a ratio measured in one run (about 45 s); the figures go to the summary.
# The full 10 x 100 x 5,000 measurement: newton-bench --memory-rounds (docs/benchmarks.md).
target/debug/newton-bench --memory-check 3 10 5000 --out target/bench-memory-check

step "Orca 48.1 (Debian 13 root) and Orca 51.1 (Debian unstable root): the Orca tests again under the second and third real clients, beside the steps above"
# scripts/orca-root.sh debootstraps each root from the registries (under CI always fresh: nothing
# is cached outside the run): trixie with Orca 48.1 and at-spi2-core 2.56, sid with Orca 51.1 and
# at-spi2-core 2.62. Which tests run under them and why: tests/README.md "Orca 48 and 51". Their
# bridge is the release binary the package ships (built from vendor/ by the release checks); the
# pass under Orca 43.1 ran the debug build, with its overflow checks and debug assertions.
# Both are awaited and reported before a failure of either ends the run.
passes_failed=0
await_orca_pass orca48 "Orca 48.1" || passes_failed=1
await_orca_pass orca51 "Orca 51.1" || passes_failed=1
[[ $passes_failed -eq 0 ]] || exit 1

# Reported, not asserted: written by legacy/tests/parity.rs (latency_of_the_same_queries_on_both_paths_is_reported).
if [[ -f target/tmp/parity-latency.txt ]]; then
  step "legacy (accesskit_unix) versus bridged latency"
  cat target/tmp/parity-latency.txt
fi

step "all checks passed in $((SECONDS - start)) s"
