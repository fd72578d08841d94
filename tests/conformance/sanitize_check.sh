#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sanitize_check.sh - a conformance suite run with the stream-order sanitizer
# on (XDEV_SANITIZE=streams, set by the ctest entry): the suite must pass, and
# every report must be one of its deliberate races, listed in
# sanitizer.expected; each race listed for the suite must be reported (so a
# sanitizer that stops seeing them fails too).
#
# A report names two call sites, "from <program>+0x<offset>"; addr2line turns
# each into the function that made the call, and the test it belongs to
# (START_TEST(t) makes t_fn and t_body, tests/common/xt.h). A report is
# deliberate when both of its sites are in tests listed for the suite.
#
# Usage: sanitize_check.sh <suite executable> <suite> <sanitizer.expected>
set -u
exe=$1
suite=$2
expected=$3
if ! command -v addr2line >/dev/null 2>&1; then
    echo "SKIP $suite: addr2line (binutils) is not installed: reports cannot be traced to tests"
    exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$exe" >"$log" 2>&1
rc=$?
cat "$log"
if [ "$rc" -eq 77 ]; then exit 77; fi
if [ "$rc" -ne 0 ]; then
    echo "FAIL $suite with XDEV_SANITIZE=streams: the suite itself failed (exit $rc)"
    exit 1
fi
if grep -q 'further reports are counted, not printed' "$log"; then
    echo "FAIL $suite: more sanitizer reports than are printed (100): races outside the list"
    exit 1
fi
# The tests this suite races in on purpose, one per line.
allowed=$(awk -v s="$suite." 'index($1, s) == 1 { print substr($1, length(s) + 1) }' "$expected")

# The test (or helper) a site "<program>+0x<offset>" is in.
site_test() {
    mod=${1%+0x*}
    off=${1##*+}
    addr2line -f -i -e "$mod" "$off" 2>/dev/null | awk 'NR % 2 == 1 { f = $0 } END { print f }' |
        sed -e 's/_body$//' -e 's/_fn$//'
}

bad=0
seen=""
reports=0
# Each report: its header line, then the two uses, each "... from <site>[ (sym)]".
sites=$(awk '/^xdev sanitizer: (unordered use|device memory freed)/ { n = 2; r++; next }
             n > 0 { n--; if (match($0, /from [^ ]+\+0x[0-9a-f]+/)) print r, substr($0, RSTART + 5, RLENGTH - 5); else print r, "?" }' "$log")
cur=""
cur_ok=1
cur_tests=""
finish() {
    [ -z "$cur" ] && return
    reports=$((reports + 1))
    if [ "$cur_ok" -eq 1 ]; then
        seen="$seen $cur_tests"
    else
        echo "FAIL $suite: report $cur is not one of the suite's deliberate races (sites in: $cur_tests; listed for $suite: $(echo $allowed)); add it to $expected only if the test races on purpose"
        bad=1
    fi
}
while read -r r site; do
    [ -z "$r" ] && continue
    if [ "$r" != "$cur" ]; then
        finish
        cur=$r
        cur_ok=1
        cur_tests=""
    fi
    t="?"
    [ "$site" != "?" ] && t=$(site_test "$site")
    [ -z "$t" ] && t="?"
    cur_tests="$cur_tests $t"
    echo "$allowed" | grep -qx -- "$t" || cur_ok=0
done <<EOF
$sites
EOF
finish
for t in $allowed; do
    case " $seen " in
    *" $t "*) ;;
    *)
        echo "FAIL $suite: $suite.$t races on purpose ($expected) but the sanitizer reported nothing there"
        bad=1
        ;;
    esac
done
echo "sanitize_check $suite: $reports report(s), deliberate: $(echo $allowed | tr ' ' ',')"
exit $bad
