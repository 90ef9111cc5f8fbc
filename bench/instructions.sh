#!/usr/bin/env bash
# instructions.sh OLD_REV NEW_REV [BENCH_REGEX] [PKG...]
#
# Compares two builds by the instructions one benchmark operation executes, which do not depend on
# what else the machine is doing (wall-clock benchmarks on a shared machine swing by a quarter).
# Each revision is exported from git into a temporary directory and its test binaries are built
# there; a revision "." is the working tree as it is. Every benchmark (and sub-benchmark) matching
# BENCH_REGEX (default: all) in the packages (default: ./mapper ./pipeline) then runs under
# callgrind with N and N + STEP iterations; the difference divided by STEP is the cost of one
# operation, setup cancelled out (STEP grows for an operation so cheap that STEP of them would be
# lost in a run's noise). Old and new run alternately, ROUNDS times each (the median is
# printed, and the range when ROUNDS > 1). A benchmark one revision lacks shows "-".
#
# What runs after the benchmarks while a package's TestMain checks for leaked goroutines (goleak) is
# left out: it waits and retries by the wall clock.
#
# The collector is off (GOGC=off unless GOGC is set): a collection falls in one run and not in the
# other often enough to move a figure by a few hundred instructions per operation, which would swamp
# the difference between builds. What an operation allocates is go test's allocs/op and B/op; the
# runtime.GC the testing package calls before each run still runs.
#
# Environment: N (default 1000), STEP (default 10000), ROUNDS (default 1), KEEP=1 keeps the
# temporary directory (binaries and callgrind files, for callgrind_annotate).
#
# Output: a Markdown table on standard output, progress on standard error. Needs git, go, valgrind.
#
#   bench/instructions.sh HEAD~5 . '^BenchmarkMap' ./mapper
set -euo pipefail

if [ $# -lt 2 ]; then
	sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
old_rev=$1 new_rev=$2
regex=${3:-.}
shift $(($# < 3 ? $# : 3))
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./mapper ./pipeline)
n=${N:-1000} step=${STEP:-10000} rounds=${ROUNDS:-1}
export GOGC=${GOGC:-off}

root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/instructions.XXXXXX")
if [ "${KEEP:-}" = 1 ]; then
	echo "keeping $tmp" >&2
else
	trap 'rm -rf "$tmp"' EXIT
fi

log() { echo "instructions: $*" >&2; }

# source SIDE REV: the directory holding revision REV's tree.
source_of() {
	if [ "$2" = . ]; then
		echo "$root"
		return
	fi
	mkdir -p "$tmp/$1/src"
	git -C "$root" archive "$2" | tar -x -C "$tmp/$1/src"
	echo "$tmp/$1/src"
}

# binary SIDE PKG: the path of SIDE's test binary of PKG.
binary() { echo "$tmp/$1/$(echo "$2" | tr -c 'a-zA-Z0-9\n' _).test"; }

# pattern NAME: a -test.bench pattern matching benchmark NAME (levels split at /) and nothing else.
pattern() {
	local IFS=/ out= part
	for part in $1; do
		out+="${out:+/}^$(printf '%s' "$part" | sed 's/[][\\.*^$+?(){}|]/\\&/g')\$"
	done
	echo "$out"
}

# leaves SIDE PKG: the names of the benchmarks and sub-benchmarks matching regex, one per line, as
# a one-iteration run prints them.
leaves() {
	local bin top
	bin=$(binary "$1" "$2")
	[ -x "$bin" ] || return 0
	for top in $(cd "${dirs[$1]}/$2" && "$bin" -test.list "$regex" | grep '^Benchmark' || true); do
		(cd "${dirs[$1]}/$2" && GOMAXPROCS=1 "$bin" -test.run '^$' -test.bench "$(pattern "$top")" -test.benchtime 1x) |
			awk '/^Benchmark/ { print $1 }'
	done
}

# count SIDE PKG NAME ITERATIONS: the instructions of a run of benchmark NAME.
count() {
	local bin out
	bin=$(binary "$1" "$2")
	out="$tmp/$1/$(echo "$2/$3" | tr -c 'a-zA-Z0-9\n' _)-$4-$5.callgrind"
	if ! (cd "${dirs[$1]}/$2" && GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind \
		--dump-before="$leakcheck" --callgrind-out-file="$out" "$bin" -test.run '^$' \
		-test.bench "$(pattern "$3")" -test.benchtime "$4x" >"$out.log" 2>&1); then
		log "$1 $2 $3 failed; see $out.log" && tail -5 "$out.log" >&2
		return 1
	fi
	# With a leak check, the part before it (callgrind dumps there), else the whole run.
	[ -f "$out.1" ] && out="$out.1"
	awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

# leakcheck is where a package's TestMain checks for leaked goroutines after the benchmarks: goleak
# waits, retries and prints stacks for as long as the wall clock says, so its instructions are noise
# and are left out.
leakcheck='go.uber.org/goleak.Find'


# per_op SIDE PKG NAME ROUND: the instructions of one operation. An operation so cheap that STEP of
# them are under 100 million instructions is measured again with enough of them: a run's own noise is
# some hundred thousand instructions.
per_op() {
	local a b s=$step
	a=$(count "$1" "$2" "$3" "$n" "$4") && b=$(count "$1" "$2" "$3" $((n + s)) "$4") || {
		echo failed
		return
	}
	if [ $((b - a)) -lt 100000000 ]; then
		s=$((s * (100000000 / ((b - a) > 1000000 ? (b - a) : 1000000) + 1)))
		b=$(count "$1" "$2" "$3" $((n + s)) "$4") || {
			echo failed
			return
		}
	fi
	echo $(((b - a + s / 2) / s))
}

declare -A dirs
for side in old new; do
	rev=$old_rev
	[ $side = new ] && rev=$new_rev
	dirs[$side]=$(source_of $side "$rev")
	log "$side is $rev ($(git -C "$root" rev-parse --short "${rev/#./HEAD}")$([ "$rev" = . ] && echo ' and the working tree'))"
	for pkg in "${pkgs[@]}"; do
		if [ -d "${dirs[$side]}/$pkg" ]; then
			(cd "${dirs[$side]}" && go test -c -o "$(binary $side "$pkg")" "$pkg")
		else
			log "$side has no package $pkg"
		fi
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
show() { # show VALUES: the median of VALUES, and their range when there are several
	local m
	[ -n "$1" ] || { echo -; return; }
	m=$(tr ' ' '\n' <<<"$1" | grep -v '^$' | median)
	if [ "$rounds" -gt 1 ]; then
		echo "$m ($(tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -n | sed -n '1p;$p' | paste -sd '-'))"
	else
		echo "$m"
	fi
}

echo "| package | benchmark | old | new | new ÷ old |"
echo "| --- | --- | --- | --- | --- |"
for pkg in "${pkgs[@]}"; do
	declare -A has=()
	names=()
	for side in old new; do
		while read -r name; do
			[ -n "$name" ] || continue
			[ -n "${has[$name]:-}" ] || names+=("$name")
			has[$name]+=" $side"
		done < <(leaves $side "$pkg")
	done
	for name in "${names[@]}"; do
		declare -A vals=([old]= [new]=)
		for ((r = 1; r <= rounds; r++)); do
			for side in old new; do
				case "${has[$name]}" in *$side*) ;; *) continue ;; esac
				log "$pkg $name $side round $r"
				v=$(per_op $side "$pkg" "$name" $r)
				[ "$v" = failed ] || vals[$side]+=" $v"
			done
		done
		o=$(show "${vals[old]}") w=$(show "${vals[new]}")
		ratio=-
		if [ "$o" != - ] && [ "$w" != - ]; then
			ratio=$(awk -v a="${o%% *}" -v b="${w%% *}" 'BEGIN { printf "%.3f", b / a }')
		fi
		echo "| ${pkg#./} | \`$name\` | $o | $w | $ratio |"
	done
	unset has
done
