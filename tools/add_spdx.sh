#!/usr/bin/env bash
# tools/add_spdx.sh - adds "SPDX-License-Identifier: Apache-2.0" to every source file that lacks
# it in its first 3 lines, in the file kind's comment syntax. The files are the ones
# `tools/check_tree.sh spdx` reports, so the two agree on what a source file is. Idempotent: a
# second run finds nothing to do. Where the line goes:
#
#   .c .h .cu .h.in                    line 1: /* SPDX-License-Identifier: Apache-2.0 */
#   .cpp .cc .hpp                      line 1: // SPDX-License-Identifier: Apache-2.0
#   CMakeLists.txt .cmake .cmake.in
#   .pc.in .sh .py, other scripts      line 1, or after the #! line (and a Python coding
#                                      line): # SPDX-License-Identifier: Apache-2.0
#   .html                              after a first <!doctype ...> line, else line 1:
#                                      <!-- SPDX-License-Identifier: Apache-2.0 -->
#
# Usage: tools/add_spdx.sh [-n]   (-n: only list what would change). Exits 1 if a reported file
# is of a kind it does not know (it then changes nothing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dry=0
case ${1:-} in
-n) dry=1 ;;
"") ;;
*) echo "usage: tools/add_spdx.sh [-n]" >&2; exit 2 ;;
esac

# check_tree.sh exits 1 when it reports files; its report is the list.
report=$(bash tools/check_tree.sh spdx 2>/dev/null || true)
files=$(printf '%s\n' "$report" | sed -n 's/^\(.*\):1: \[spdx\] .*/\1/p')
if [ -z "$files" ]; then
  echo "add_spdx.sh: every source file has its SPDX line"
  exit 0
fi

exec python3 - "$dry" <<'PY' 3<<<"$files"
import re, sys

DRY = sys.argv[1] == '1'
ID = 'SPDX-License-Identifier: Apache-2.0'
files = [f for f in open(3).read().split('\n') if f]


def style(path, first):
    name = path.rsplit('/', 1)[-1]
    if path.endswith(('.c', '.h', '.cu', '.h.in')):
        return 'c'
    if path.endswith(('.cpp', '.cc', '.hpp')):
        return 'cpp'
    if path.endswith('.html'):
        return 'html'
    if (name == 'CMakeLists.txt' or path.endswith(('.cmake', '.cmake.in', '.pc.in', '.sh', '.py'))
            or first.startswith('#!')):
        return 'hash'
    return None


plan = []
for f in files:
    with open(f, encoding='utf-8', newline='') as fh:
        lines = fh.readlines()
    if any(ID in line for line in lines[:3]):
        continue  # already there (a concurrent edit): idempotent
    first = lines[0] if lines else ''
    kind = style(f, first)
    if kind is None:
        print(f'add_spdx.sh: {f}: unknown file kind, add the line by hand', file=sys.stderr)
        sys.exit(1)
    at = 0
    if kind == 'c':
        text = f'/* {ID} */\n'
    elif kind == 'cpp':
        text = f'// {ID}\n'
    elif kind == 'html':
        text = f'<!-- {ID} -->\n'
        if re.match(r'\s*<!doctype', first, re.I):
            at = 1
    else:
        text = f'# {ID}\n'
        if first.startswith('#!'):
            at = 1
            if len(lines) > 1 and re.match(r'#.*coding[:=]', lines[1]):
                at = 2
    plan.append((f, lines, at, text))

for f, lines, at, text in plan:
    print(f'{"would add" if DRY else "added"} at line {at + 1}: {f}')
    if DRY:
        continue
    if at > 0 and not lines[at - 1].endswith('\n'):
        lines[at - 1] += '\n'
    lines.insert(at, text)
    with open(f, 'w', encoding='utf-8', newline='') as fh:
        fh.writelines(lines)
PY
