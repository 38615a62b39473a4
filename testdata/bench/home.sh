#!/usr/bin/env bash
# A home directory of sessions: agentconv beside ccusage 20.0.24 (npm) on a
# generated home of Claude Code, Codex and Gemini CLI sessions (issue 27).
#
#   testdata/bench/home.sh [N]          # N runs of each, median; default 5
#   HOMEDIR=/tmp/bench-home testdata/bench/home.sh 3   # keep the home between runs
#
# The home (not committed; made again, the same, when HOMEDIR lacks it):
# 1,200 Claude Code session files (`agentconv generate --to claude-session
# --max-output 40000`, seeds 1…1200, 250 KB and, one in ten, 1.5 MB), 600
# Codex rollouts (`--to codex-rollout`, 150 KB and 1 MB) and 200 Gemini CLI
# session files (the kept captures of testdata/agents/gemini-cli, each copy
# with a session id of its own): 2,000 sessions, about 700 MB (a file
# ends with its last run, past the size asked). Every generated file gets
# a session id of its own, which all its runs share, as a session file's
# runs do (the generator gives each run an id).
#
# It measures, interleaved (one run of each in turn, N times), wall and
# CPU seconds and peak RSS (GNU time):
#   - `agentconv sessions --json` against `ccusage session --json --offline`:
#     reading every file (--no-cache), and again with the cache of the last
#     listing, no file having changed since;
#   - the home to otlp-json (its three places given as directories);
#   - the home `--to atif -o DIR` against the home to otlp-json `-o FILE`,
#     which is made durable too (an fsync; -o DIR's files get a syncfs),
#     and against otlp-json on standard output;
#   - one 100 MB and one 1 GB generated Claude Code session to otlp-json
#     spans, beside a jq one-liner that reads every record
#     (select(.type == "assistant") | .message.usage);
#   - the floors, what any program that reads the input must spend:
#     testdata/bench/floor (goccy's json.Valid over each line, on every
#     core) over the home and over the 1 GB session, and, for atif, a copy
#     of the tree that atif wrote (cp -r, then sync -f), which makes the
#     same directories and files with the same bytes and makes them
#     durable.
# Needs node and npm (ccusage is installed into
# ~/.cache/agentconv/ccusage-20.0.24), jq and GNU time (/usr/bin/time).
set -euo pipefail
n=${1:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"

go build -o "$work/agentconv" .
go build -o "$work/floor" ./testdata/bench/floor
ac="$work/agentconv"
ccdir=${CCUSAGE_DIR:-$HOME/.cache/agentconv/ccusage-20.0.24}
if [ ! -x "$ccdir/node_modules/.bin/ccusage" ]; then
  mkdir -p "$ccdir"
  (cd "$ccdir" && npm install --no-audit --no-fund --silent ccusage@20.0.24)
fi
cc="$ccdir/node_modules/.bin/ccusage"

home=${HOMEDIR:-$work/home}
if [ ! -f "$home/.done" ]; then
  rm -rf "$home"
  mkdir -p "$home"
  # sid I: the session id of the Ith file of a kind K (1: Claude, 2: Codex, 3: Gemini)
  sid() { printf '%08x-%04x-4000-8000-%012x' "$2" "$1" "$2"; }
  for i in $(seq 1 1200); do
    if ((i % 10 == 0)); then size=1.5MB; else size=250KB; fi
    id=$(sid 1 "$i")
    dir="$home/.claude/projects/-work-project-$((i % 40))"
    mkdir -p "$dir"
    "$ac" generate --to claude-session --size "$size" --seed "$i" --max-output 40000 |
      sed "s/00000000-0000-4000-8000-[0-9a-f]\{12\}/$id/g" > "$dir/$id.jsonl"
  done
  for i in $(seq 1 600); do
    if ((i % 10 == 0)); then size=1MB; else size=150KB; fi
    id=$(sid 2 "$i")
    day=$(printf '%02d' $((i % 28 + 1)))
    dir="$home/.codex/sessions/2026/01/$day"
    mkdir -p "$dir"
    "$ac" generate --to codex-rollout --size "$size" --seed "$((10000 + i))" --max-output 40000 |
      sed "s/00000000-0000-4000-8000-[0-9a-f]\{12\}/$id/g" > "$dir/rollout-2026-01-${day}T00-00-$(printf '%02d' $((i % 60)))-$id.jsonl"
  done
  mapfile -t gem < <(find testdata/agents/gemini-cli -path '*/home/.gemini/tmp/*/chats/session-*.json*' | sort)
  for i in $(seq 1 200); do
    f=${gem[$(((i - 1) % ${#gem[@]}))]}
    old=$(grep -o -m1 '"sessionId": *"[^"]*"' "$f" | sed 's/.*"\([^"]*\)"$/\1/')
    id=$(sid 3 "$i")
    dir="$home/.gemini/tmp/project-$((i % 20))/chats"
    mkdir -p "$dir"
    ext=${f##*.}
    sed "s/$old/$id/g" "$f" > "$dir/session-2026-01-01T00-$(printf '%02d' $((i % 60)))-${id:0:8}.$ext"
  done
  touch "$home/.done"
fi
places=("$home/.claude/projects" "$home/.codex/sessions" "$home/.gemini/tmp")
files=$(find "${places[@]}" -type f | wc -l)
bytes=$(du -sb "${places[@]}" | awk '{ s += $1 } END { print s }')
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3); node $(node --version); $(jq --version)"
echo "home: $files files, $((bytes / 1000000)) MB ($(find "$home/.claude" -type f | wc -l) Claude Code, $(find "$home/.codex" -type f | wc -l) Codex, $(find "$home/.gemini" -type f | wc -l) Gemini CLI)"

export CLAUDE_CONFIG_DIR="$home/.claude" CODEX_HOME="$home/.codex" GEMINI_CLI_HOME="$home"
# measure CMD...: wall seconds, CPU-seconds (user + system), peak RSS (KB).
measure() {
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/out" 2> "$work/stderr" || { tail -3 "$work/stderr" >&2; return 1; }
  awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$work/time"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 0.001) }'; }

"$ac" generate --to claude-session --size 100MB --seed 7 > "$work/s100.jsonl"
"$ac" generate --to claude-session --size 1GB --seed 7 > "$work/s1g.jsonl"
# The cache of the listings (sessions_cache.go), made once: "cached" is a
# listing of a home where no file changed since the last one.
HOME="$home" XDG_CACHE_HOME="$work/cache" "$ac" sessions --json > /dev/null
# copytree: the atif floor, a durable copy of the tree atif wrote in the
# first round. Each round writes trees of its own, removed after the last
# round, outside the measures.
printf '#!/bin/sh\ncp -r "$1" "$2" && sync -f "$2"\n' > "$work/copytree"
chmod +x "$work/copytree"
# each: a run of each measure, in turn
declare -A s=() c=() k=()
for i in $(seq 1 "$n"); do
  while read -r name cmd; do
    read -r ws cs kb < <(HOME="$home" measure $cmd)
    s[$name]+="$ws " c[$name]+="$cs " k[$name]+="$kb "
    if [ "$name" = sessions ] && [ "$i" = 1 ]; then
      echo "sessions --json lists $(jq -s 'length' "$work/out" 2>/dev/null || echo '?') sessions"
      cp "$work/out" "$work/sessions.out"
    fi
    if [ "$name" = cached ] && [ "$i" = 1 ] && ! cmp -s "$work/out" "$work/sessions.out"; then
      echo "the cached listing differs from the listing that reads every file" >&2
      exit 1
    fi
    if [ "$name" = ccusage ] && [ "$i" = 1 ]; then
      echo "ccusage session --json lists $(jq '.session | length' "$work/out" 2>/dev/null || echo '?') sessions"
    fi
    rm -rf "$work/otlp.json"
  done <<LIST
sessions $ac sessions --json --no-cache
cached env XDG_CACHE_HOME=$work/cache $ac sessions --json
ccusage $cc session --json --offline
otlp $ac --to otlp-json ${places[*]}
otlpfile $ac --to otlp-json -o $work/otlp.json ${places[*]}
atif $ac --to atif -q -o $work/atif.$i/ ${places[*]}
atiffloor $work/copytree $work/atif.1 $work/atif.copy.$i
floorhome $work/floor ${places[*]}
s100 $ac --from claude-session --to otlp-json $work/s100.jsonl
jq100 jq -c select(.type=="assistant")|.message.usage $work/s100.jsonl
s1g $ac --from claude-session --to otlp-json $work/s1g.jsonl
jq1g jq -c select(.type=="assistant")|.message.usage $work/s1g.jsonl
floor1g $work/floor $work/s1g.jsonl
LIST
done
rm -rf "$work"/atif.*
for name in sessions cached ccusage otlp otlpfile atif atiffloor floorhome s100 jq100 s1g jq1g floor1g; do
  # shellcheck disable=SC2086
  s[$name]=$(median ${s[$name]}) c[$name]=$(median ${c[$name]}) k[$name]=$(median ${k[$name]})
done
echo
echo "medians of $n interleaved runs (wall s / CPU s / peak RSS MB):"
for name in sessions cached ccusage otlp otlpfile atif atiffloor floorhome s100 jq100 s1g jq1g floor1g; do
  printf "  %-9s %7s s %7s CPU-s %7s MB\n" "$name" "${s[$name]}" "${c[$name]}" "$((${k[$name]} / 1024))"
done
echo
echo "targets (issue 27):"
echo "  sessions --json vs ccusage session --json: $(ratio "${s[ccusage]}" "${s[sessions]}")× faster reading every file (--no-cache; wall; CPU $(ratio "${c[ccusage]}" "${c[sessions]}")×), $(ratio "${s[ccusage]}" "${s[cached]}")× with the cache of the last listing (wall; CPU $(ratio "${c[ccusage]}" "${c[cached]}")×); target 3×"
echo "  home to otlp-json vs ccusage's listing: $(ratio "${s[ccusage]}" "${s[otlp]}")× (wall); target ≥ 1×"
echo "  1 GB session to spans vs jq: $(ratio "${s[jq1g]}" "${s[s1g]}")× (wall; CPU $(ratio "${c[jq1g]}" "${c[s1g]}")×); target 10×; peak RSS $((${k[s100]} / 1024)) MB at 100 MB, $((${k[s1g]} / 1024)) MB at 1 GB; target < 100 MB"
echo "  --to atif -o DIR vs otlp-json -o FILE: $(ratio "${s[atif]}" "${s[otlpfile]}")× the time (wall; CPU $(ratio "${c[atif]}" "${c[otlpfile]}")×); target ≤ 2×"
echo "    (both made durable before they are in place; against otlp-json on standard output, which is not: $(ratio "${s[atif]}" "${s[otlp]}")× wall, $(ratio "${c[atif]}" "${c[otlp]}")× CPU)"
echo
echo "floors (what the target asks, against the least any program that reads the input spends):"
echo "  sessions 3× ccusage asks for $(ratio "${s[ccusage]}" 3) s; json.Valid over every line of the home, on every core: ${s[floorhome]} s ($(ratio "${c[floorhome]}" 1) CPU-s); agentconv is $(ratio "${s[sessions]}" "${s[floorhome]}")× the floor, $(ratio "${s[cached]}" "${s[floorhome]}")× from the cache"
echo "  otlp-json ≥ ccusage asks for ${s[ccusage]} s; agentconv is $(ratio "${s[otlp]}" "${s[floorhome]}")× the floor"
echo "  1 GB 10× jq asks for $(ratio "${s[jq1g]}" 10) s; json.Valid over its lines: ${s[floor1g]} s; agentconv is $(ratio "${s[s1g]}" "${s[floor1g]}")× the floor"
echo "  atif: a durable copy of the tree atif wrote (cp -r, sync -f): ${s[atiffloor]} s; atif is $(ratio "${s[atif]}" "${s[atiffloor]}")× that, and 2× otlp-json -o FILE asks for $(ratio "${s[otlpfile]}" 0.5) s"
