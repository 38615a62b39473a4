#!/usr/bin/env bash
# Many small files against one big one: a directory of N small session
# files (copies of SRC, each with its own session id) converted to otlp-json,
# against one file holding the same bytes (the copies one after another:
# the same runs). The target: the directory within 1.5× of the one file.
# It prints the wall and CPU times of each, with all cores and with one
# worker, and the ratio.
#
#   testdata/bench/many.sh [N]                  # default 10000
#   SRC=testdata/codex/letta-tool-calls-rollout.jsonl \
#     NAME='rollout-2026-03-30T05-38-34-%05d.jsonl' testdata/bench/many.sh
#
# NAME is each copy's file name, a printf pattern of the copy's number
# (default session-%05d.EXT), for a dialect that reads only files of its
# own names from a directory (codex-rollout: rollout-*.jsonl).
# SRC is a small fixture of a dialect that reads a directory (Dialect.DirFiles;
# `agentconv formats` and the README say which); its "session_id" or
# "sessionId" values are replaced in each copy. Needs GNU time (/usr/bin/time).
set -euo pipefail
n=${1:-10000}
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${SRC:-testdata/atif/rfc-0001-example.json}
name=${NAME:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"

go build -o "$work/agentconv" .
ac="$work/agentconv"
ext=${src##*.}
mkdir -p "$work/dir"
# N copies, 100 to a subdirectory, and the same bytes in one file.
[ -n "$name" ] || name="session-%05d.$ext"
awk -v n="$n" -v dir="$work/dir" -v name="$name" -v one="$work/one.$ext" '
  { lines[NR] = $0 }
  END {
    for (i = 1; i <= n; i++) {
      sub_ = sprintf("%s/%03d", dir, int((i - 1) / 100))
      if ((i - 1) % 100 == 0) system("mkdir -p " sub_)
      f = sprintf("%s/" name, sub_, i)
      for (j = 1; j <= NR; j++) {
        l = lines[j]
        gsub(/"(session_id|sessionId)": *"[^"]*"/, "\"session_id\": \"bench-" i "\"", l)
        if (l ~ /sessionId/) gsub(/"session_id": "bench-/, "\"sessionId\": \"bench-", l)
        # a Codex rollout names its session in session_meta'"'"'s payload.id
        if (l ~ /"type": *"session_meta"/) sub(/"payload": *\{"id": *"[^"]*"/, "\"payload\":{\"id\":\"bench-" i "\"", l)
        print l > f
        print l > one
      }
      close(f)
    }
  }' "$src"
bytes=$(stat -c %s "$work/one.$ext")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(go version | cut -d' ' -f3)"
echo "input: $n copies of $src ($(stat -c %s "$src") bytes each, $bytes bytes in all)"

# measure CMD...: the best of 5 runs; prints wall seconds and user+sys seconds.
measure() {
  local best="" cpu=""
  for _ in 1 2 3 4 5; do
    /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" > "$work/out" 2> "$work/stderr" || { cat "$work/stderr" >&2; return 1; }
    read -r e u s < "$work/time"
    if [ -z "$best" ] || awk -v a="$e" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$e; cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    fi
  done
  echo "$best $cpu"
}
spans() { grep -o '"spanId"' "$work/out" | wc -l; }

read -r one_s one_cpu < <(measure "$ac" --to otlp-json "$work/one.$ext")
one_spans=$(spans)
read -r dir_s dir_cpu < <(measure "$ac" --to otlp-json "$work/dir")
dir_spans=$(spans)
read -r dir1_s dir1_cpu < <(measure "$ac" --to otlp-json --workers 1 "$work/dir")
echo
echo "--to otlp-json, best of 5:"
printf "  one file of %d runs      %6.2f s  (CPU %6.2f s)  %d spans\n" "$n" "$one_s" "$one_cpu" "$one_spans"
printf "  a directory of %d files  %6.2f s  (CPU %6.2f s)  %d spans\n" "$n" "$dir_s" "$dir_cpu" "$dir_spans"
printf "    the same, one worker   %6.2f s  (CPU %6.2f s)\n" "$dir1_s" "$dir1_cpu"
awk -v d="$dir_s" -v o="$one_s" -v dc="$dir_cpu" -v oc="$one_cpu" 'BEGIN {
  r = d / (o > 0 ? o : 0.01)
  printf "  ratio: the directory takes %.2f× the time of the one file (target: within 1.5×)%s, and %.2f× its CPU\n", r, (r <= 1.5 ? "" : " — OVER THE TARGET"), dc / (oc > 0 ? oc : 0.01)
}'
