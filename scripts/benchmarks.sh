#!/usr/bin/env bash
# Runs every benchmark suite once and renders BENCHMARKS.md and docs/benchmarks/*.svg from that run.
#
# usage: scripts/benchmarks.sh [--quick] [--redis HOST:PORT | --start-redis] [--traces DIR]
#
#   --quick         smaller sizes (a few minutes; the page says the run was quick)
#   --redis ADDR    include the remote suite, against the Redis server at ADDR
#   --start-redis   include it against a throwaway redis-server on loopback, stopped at the end
#   --traces DIR    the hit-ratio traces (default: ../shared/traces beside the checkout); the disk
#                   tier's sized traces are in its sized/ folder
#
# Each suite runs as its own command; the page prints each one above its table. The JSON lines,
# with the machine and the commands, are kept in docs/benchmarks/results.jsonl, from which
# `larder-bench report docs/benchmarks/results.jsonl` renders the page again. A full run keeps
# about 18 GiB of disk-suite files in $TMPDIR (default /tmp) until that suite ends.
# SWIFT_BUILD_FLAGS, if set, is passed to `swift build` (include or library paths, say).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=()
redis=""
start_redis=0
traces=()
sized_traces=()
for ((i = 1; i <= $#; i++)); do
    case "${!i}" in
    --quick) quick=(--quick) ;;
    --redis)
        i=$((i + 1))
        redis="${!i:?--redis needs HOST:PORT}"
        ;;
    --start-redis) start_redis=1 ;;
    --traces)
        i=$((i + 1))
        traces=(--traces "${!i:?--traces needs a folder}")
        sized_traces=(--traces "${!i}/sized")
        ;;
    -h | --help)
        sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "benchmarks.sh: unknown argument ${!i} (see --help)" >&2
        exit 2
        ;;
    esac
done
command_line="scripts/benchmarks.sh${*:+ $*}"

# A JSON string: backslashes and quotes escaped, control characters dropped.
json() {
    local text
    text="$(printf '%s' "$1" | tr -d '\000-\037')"
    text="${text//\\/\\\\}"
    text="${text//\"/\\\"}"
    printf '"%s"' "$text"
}

redis_pid=""
results_tmp="$(mktemp)"
cleanup() {
    rm -f "$results_tmp"
    if [[ -n "$redis_pid" ]]; then kill "$redis_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

if ((start_redis)); then
    command -v redis-server >/dev/null || {
        echo "benchmarks.sh: --start-redis needs redis-server on PATH" >&2
        exit 2
    }
    for _ in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 20000))
        redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null 2>&1 &
        redis_pid=$!
        for _ in $(seq 50); do
            if redis-cli -p "$port" ping >/dev/null 2>&1; then break 2; fi
            kill -0 "$redis_pid" 2>/dev/null || continue 2
            sleep 0.1
        done
        kill "$redis_pid" 2>/dev/null || true
    done
    redis-cli -p "$port" ping >/dev/null 2>&1 || {
        echo "benchmarks.sh: redis-server did not start" >&2
        exit 1
    }
    redis="127.0.0.1:$port"
fi

# shellcheck disable=SC2086  # SWIFT_BUILD_FLAGS is a list of flags
swift build -c release --product larder-bench ${SWIFT_BUILD_FLAGS:-}
bench=.build/release/larder-bench

# The machine, once.
tmp="${TMPDIR:-/tmp}"
if [[ -r /proc/cpuinfo ]]; then
    cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    memory="$(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
else
    cpu="$(sysctl -n machdep.cpu.brand_string 2>/dev/null || uname -m)"
    memory="$(($(sysctl -n hw.memsize) / 1073741824)) GiB"
    load="$(sysctl -n vm.loadavg | tr -d '{}' | awk '{ print $1, $2, $3 }')"
fi
if command -v findmnt >/dev/null; then
    filesystem="$tmp on $(findmnt -n -o SOURCE,FSTYPE,OPTIONS --target "$tmp" | awk '{ print $1 ", " $2 " (" $3 ")" }')"
else
    filesystem="$tmp on $(df -P "$tmp" | awk 'NR == 2 { print $1 }')"
fi
{
    printf '{"run": "machine", "cpu": %s, "cores": %s, "memory": %s, "kernel": %s, "swift": %s, "filesystem": %s, "date": %s, "load": %s, "command": %s}\n' \
        "$(json "$cpu")" "$(json "$(getconf _NPROCESSORS_ONLN)")" "$(json "$memory")" "$(json "$(uname -sr)")" \
        "$(json "$(swift --version 2>/dev/null | head -n 1)")" "$(json "$filesystem")" "$(json "$(date -u '+%Y-%m-%d %H:%M UTC')")" \
        "$(json "$load")" "$(json "$command_line")"
} >>"$results_tmp"

suites=(memory disk concurrency gc open hybrid loadthrough)
[[ -n "$redis" ]] && suites+=(remote)
suites+=(hitratio hitratio-sized)
for suite in "${suites[@]}"; do
    run=("$bench" --json ${quick[@]+"${quick[@]}"})
    case "$suite" in
    remote) run+=(--redis "$redis") ;;
    # The index's memory a record at a million records too (about 7 minutes more).
    open) ((${#quick[@]})) || run+=(--sizes 1000,10000,100000,1000000) ;;
    hitratio) run+=(--references ${traces[@]+"${traces[@]}"}) ;;
    hitratio-sized) run+=(--sized ${sized_traces[@]+"${sized_traces[@]}"}) ;;
    esac
    # hitratio-sized is the hitratio suite over the sized traces.
    run+=("${suite%-sized}")
    echo "== ${run[*]}" >&2
    start=$(date +%s)
    "${run[@]}" >>"$results_tmp"
    printf '{"run": "suite", "suite": "%s", "command": %s, "seconds": %d}\n' "$suite" "$(json "${run[*]}")" $(($(date +%s) - start)) >>"$results_tmp"
done

mkdir -p docs/benchmarks
cp "$results_tmp" docs/benchmarks/results.jsonl
"$bench" report docs/benchmarks/results.jsonl --out .
