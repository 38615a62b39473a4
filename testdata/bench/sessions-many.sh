#!/usr/bin/env bash
# `agentconv sessions --json` beside converting the same files to
# otlp-json, on directories of N small session files of four dialects
# (Claude Code sessions, Codex rollouts, ATIF trajectories and pi sessions
# from `agentconv generate`, 1 to 30 KB, each with a session id of its
# own, a thousand to a subdirectory), for each N given: wall and CPU
# seconds and peak RSS (GNU time), one run each, interleaved.
#
#   testdata/bench/sessions-many.sh [N ...]     # default: 10000 30000 100000
#
# BENCH_DIR=DIR keeps the directories between runs. Needs GNU time.
set -euo pipefail
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 30000 100000)
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
go build -o "$work/agentconv" .
ac="$work/agentconv"
dirs=${BENCH_DIR:-$work}
id=00000000-0000-4000-8000-000000000001
mkdir -p "$work/tpl"
for d in claude-session codex-rollout atif pi-session; do
  for s in 1 2 3 4 5 6 7 8; do
    "$ac" generate --to "$d" --size 1KB --max-output 300 --seed "$s" > "$work/tpl/$d.$s"
  done
done
echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3)"
for n in "${sizes[@]}"; do
  dir=$dirs/sessions-$n
  if [ ! -f "$dir/.done" ]; then
    rm -rf "$dir"
    # One awk writes every file: the i-th is of the (i mod 4)-th dialect,
    # a copy of one of its 8 templates with a session id of its own.
    awk -v n="$n" -v out="$dir" -v tpl="$work/tpl" -v id="$id" 'BEGIN {
      split("claude-session codex-rollout atif pi-session", kinds, " ")
      for (k = 1; k <= 4; k++) for (s = 1; s <= 8; s++) {
        f = tpl "/" kinds[k] "." s; t = ""
        while ((getline line < f) > 0) t = t line "\n"
        close(f); T[k, s] = t
      }
      for (i = 0; i < n; i++) {
        k = i % 4 + 1; s = int(i / 4) % 8 + 1
        sid = sprintf("%08x-%04x-4000-8000-%012x", i, i % 4, i)
        sd = sprintf("%s/%03d", out, int(i / 1000))
        if (i % 1000 == 0) system("mkdir -p " sd)
        if (k == 2) name = "rollout-2026-01-01T00-00-00-" sid ".jsonl"
        else if (k == 3) name = sid ".json"
        else name = sid ".jsonl"
        doc = T[k, s]; gsub(id, sid, doc)
        printf "%s", doc > (sd "/" name); close(sd "/" name)
      }
    }'
    touch "$dir/.done"
  fi
  echo "== $n files, $(du -sh "$dir" | cut -f1)"
  for cmd in "sessions --json" "--to otlp-json"; do
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %U %S %M" -o "$work/t" "$ac" $cmd "$dir" > /dev/null 2> "$work/err" || { tail -3 "$work/err"; exit 1; }
    read -r e u s m < "$work/t"
    printf "  %-16s %7s s wall %7.2f CPU-s %6d MB\n" "$cmd" "$e" "$(echo "$u + $s" | bc)" "$((m / 1024))"
  done
done
