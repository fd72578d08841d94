#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/check_tree.sh - the rules of this tree that a script can check, so the texts that state
# them (core/README.md, tests/README.md) stay true. Run by .ci/run (step "structure").
#
#   core-includes  no file outside core/ includes a core/ header, but for the white-box tests
#                  and fuzzers listed in CORE_INCLUDE_EXCEPTIONS below.
#   core-layers    core's folders depend downwards only (observe, graph, comm, math, kernel, interop,
#                  memory, alloc, runtime, base: core/README.md): no include of, and no call into, a higher folder, but
#                  for the upward calls listed in CORE_UPWARD below (none: a lower folder that
#                  needs a higher one runs its hooks: runtime/hooks.h, trace_probe.h,
#                  sanitizer_probe.h, alloc/pointer_registry.h's origin ops).
#   core-calls     no file in core/ calls a public function (XDEV_API in include/xdev/*.h)
#                  outside the file that defines it - core calls internal entry points, so a
#                  message is prefixed once, by the public call the user made - except a public
#                  function delegating to another of its own header, and the calls listed in
#                  CORE_PUBLIC_CALLS below.
#   format         every .c .h .cu .cpp under core/ backends/ include/ tests/ tools/ bench/
#                  examples/ is clang-format clean (.clang-format; written for clang-format 14).
#   test-env       every XDEV_* variable the library reads is unset for each test
#                  (XDEV_TEST_ENV_VARS in tests/CMakeLists.txt) or passed through on purpose
#                  (TEST_ENV_PASS_THROUGH below), and named in docs/configuration.md's
#                  "## Environment variables" section.
#   spdx           every source file carries "SPDX-License-Identifier: Apache-2.0" in its first
#                  3 lines (tools/add_spdx.sh adds it).
#   abi-version    a text that states the backend ABI's current version ("the backend ABI
#                  (3.4", "slots (ABI 3.4)") states XDEV_BACKEND_ABI_MAJOR.MINOR of
#                  include/xdev/backend.h; a version a slot or table came with is written
#                  "since ABI 3.2" and is history, not checked.
#   wiring         what libxdev starts when it loads is one list, core/wiring.c: no other file of
#                  libxdev (core/, backends/cpu/, backends/plugins.c) has a constructor or
#                  destructor, and every part's xdev_<part>_wire() defined there is called by the
#                  list (a part that is not on the list would never start).
#   table-lists    a text that lists the optional backend tables ("optional blas, fft, ...",
#                  "Optional tables (blas, ..."; 3 names or more after the word) lists every one,
#                  in the order of XDEV_BACKEND_TABLES (include/xdev/backend_slots.h): the
#                  tables with no REQUIRED slot.
#
# Every violation is printed as file:line: [rule] what; the exit status is 1 if there was one.
# An entry of an exception list that no longer matches anything is a violation too, so the
# lists stay the current truth.
#
# Usage: tools/check_tree.sh [--spdx] [--no-format] [RULE...]   (default: every rule above)
# Needs: bash, python3, clang-format (git for the file list; without it, find).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { sed -n '2,/^# Needs/{/SPDX-License-Identifier/d;s/^# \{0,1\}//p;}' "$0"; }
spdx=${XDEV_CHECK_SPDX:-1}
format=1
rules=()
for a in "$@"; do
  case $a in
  --spdx) spdx=1 ;;
  --no-format) format=0 ;;
  -h | --help) usage; exit 0 ;;
  core-includes | core-layers | core-calls | format | test-env | spdx | abi-version | wiring | table-lists) rules+=("$a") ;;
  *) echo "check_tree.sh: unknown argument '$a'" >&2; usage >&2; exit 2 ;;
  esac
done
if [ "${#rules[@]}" -eq 0 ]; then
  rules=(core-includes core-layers core-calls test-env abi-version wiring table-lists)
  [ "$format" = 1 ] && rules+=(format)
  [ "$spdx" = 1 ] && rules+=(spdx)
fi

# The files of the tree: tracked and new ones git does not ignore (so no build directory).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard | while IFS= read -r f; do
    [ -f "$f" ] && printf '%s\n' "$f"; done)
else
  files=$(find . \( -path './build*' -o -path ./.git -o -path ./out -o -path ./.device-debs \
    -o -path ./.whl \) -prune -o -type f -print | sed 's#^\./##')
fi

exec python3 - "${rules[@]}" <<'PY' 3<<<"$files"
import os, re, subprocess, sys

RULES = sys.argv[1:]
FILES = sorted(f for f in open(3).read().split('\n') if f)
bad = 0


def report(path, line, rule, what):
    global bad
    bad += 1
    print(f'{path}:{line}: [{rule}] {what}')


# ------------------------------------------------------------------ exception lists
# core-includes: (file outside core/, core header as included) -> why it may.
CORE_INCLUDE_EXCEPTIONS = {
    ('tests/common/json_check.c', 'base/json_check.h'):
        "the tests' JSON check is the library's own checker, compiled into xdev_test_common",
    ('tests/kernel_cache_test.h', 'kernel/kernel_cache.h'):
        'white-box unit test of the on-disk kernel cache (SHA-256, entries, trim), linked in directly',
    ('tests/test_kernel_cache.c', 'kernel/compile_deps.c'):
        "white-box test of compile_deps.c's file hashing (a static function): compiled into it",
    ('tests/test_kernel_cache.c', 'base/strbuf.c'):
        'what compile_deps.c uses, compiled into the same white-box test (the target links no core)',
    ('tests/test_kernel_cache.c', 'base/utf8.c'):
        'what compile_deps.c uses, compiled into the same white-box test (the target links no core)',
    ('tests/test_alloc_config.c', 'alloc/alloc_config.h'):
        'white-box unit test of the XDEV_ALLOC_CONF parser, linked in directly',
    ('tests/test_spin_lock.c', 'base/spin_lock.h'):
        "white-box unit test of the device allocator's lock (sleepers, wakes), linked in directly",
    ('tests/test_prim_compare.c', 'math/prim_compare.h'):
        "white-box unit test of select_if's predicate reader (prim_compare.c), linked in directly",
    ('tests/fuzz/fuzz_alloc_conf.c', 'alloc/alloc_config.h'):
        'fuzzer of the XDEV_ALLOC_CONF parser, linked in directly',
    ('tests/fuzz/fuzz_env.c', 'base/env.h'):
        'fuzzer of the XDEV_* environment parsers, linked in directly',
    ('tests/test_faults.c', 'runtime/fault.h'):
        'the fault injector test: its begin/end hook is exported for this suite only',
    ('tests/test_sanitizer.c', 'runtime/stream_order.h'):
        "the stream-order sanitizer's test: its clock-length hook is exported for this suite only",
    ('tests/test_enqueue_observer.c', 'runtime/enqueue.h'):
        "the enqueue path's test: its observer hook is exported for this suite only",
    ('tests/test_comm_cached.c', 'runtime/enqueue.h'):
        "the cached groups' test: their collectives still reach the enqueue path's observers",
    ('tests/test_error_format.c', 'base/error_internal.h'):
        'white-box test of the error formatter fed its own message',
    ('tests/test_handle_arena.c', 'base/handle_arena.h'):
        "white-box unit test of the handle arenas' slot and live checks (division-free), linked in directly",
    ('tests/test_thread_heap.c', 'base/thread_heap.h'):
        'white-box test of the per-thread heap blocks (thread exit, fork), linked in directly',
    ('tests/test_utf8_writers.c', 'base/json_check.h'):
        'white-box test of the writers on text that is not UTF-8: the JSON check',
    ('tests/test_utf8_writers.c', 'observe/pickle.h'):
        'white-box test of the writers on text that is not UTF-8: the pickle writer',
    ('tests/test_utf8_writers.c', 'base/strbuf.h'):
        'white-box test of the writers on text that is not UTF-8: the JSON string buffer',
    ('tests/test_utf8_writers.c', 'base/utf8.h'):
        'white-box test of the writers on text that is not UTF-8: the UTF-8 repair',
}

# core-calls: (core file, public function it calls) -> why it may. Pure queries first (no
# error state touched), then the reads of the thread's message, then real public calls.
CORE_PUBLIC_CALLS = {
    # dtype names and sizes (xdev/dtype.h): table lookups that neither fail nor touch the error
    # state; the "call internals" rule has no internal twin to prefer.
    ('core/comm/comm_checks.c', 'xdev_dtype_name'): 'dtype name in a message; pure lookup',
    ('core/comm/comm_checks.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/comm/host_collectives.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/comm/communicator.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/comm/local_comm.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/comm/shm_comm.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/math/blas.c', 'xdev_dtype_name'): 'dtype name in a message; pure lookup',
    ('core/math/blas.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/math/ops.c', 'xdev_dtype_name'): 'dtype name in a message; pure lookup',
    ('core/math/ops.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/math/primitives.c', 'xdev_dtype_name'): 'dtype name in a message; pure lookup',
    ('core/math/primitives.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/math/prim_sort.c', 'xdev_dtype_name'): 'dtype name in a message; pure lookup',
    ('core/math/prim_sort.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/math/prim_select.c', 'xdev_dtype_name'): 'dtype name in a message; pure lookup',
    ('core/math/prim_select.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/math/rng.c', 'xdev_dtype_name'): 'dtype name in a message; pure lookup',
    ('core/observe/shadow_slots.c', 'xdev_dtype_name'): 'dtype name in a report; pure lookup',
    ('core/observe/shadow_slots.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/observe/shadow_replay.c', 'xdev_dtype_size'): 'element size; pure lookup',
    ('core/observe/shadow_compute.c', 'xdev_dtype_name'): 'dtype name in a report; pure lookup',
    ('core/observe/shadow_compute.c', 'xdev_dtype_size'): 'element size; pure lookup',
    # device type names (xdev/device.h): a backend-table lookup, no error state.
    ('core/math/rng.c', 'xdev_device_type_name'): "the generator's device in a message",
    ('core/comm/rendezvous.c', 'xdev_device_type_name'): 'device types in messages; pure lookup',
    ('core/runtime/registry.c', 'xdev_device_type_name'):
        'type names in messages, accepted forms and xdev_backend_get_info',
    # the thread's message or status (xdev/error.h), read to quote or keep it; sets nothing.
    ('core/math/blas.c', 'xdev_last_error'): "keeps XDEV_ALLOW_TF32's parse message for later calls",
    ('core/math/fft.c', 'xdev_last_error'): "quotes the allocator's message (plan work area)",
    ('core/math/prim_select.c', 'xdev_last_error'): "quotes the allocator's and the predicate's element-wise call's message",
    ('core/math/prim_select.c', 'xdev_elementwise'): "select_if runs its predicate as an element-wise kernel into a flags buffer",
    ('core/math/primitives.c', 'xdev_last_error'): "keeps XDEV_DETERMINISTIC's parse message; quotes the allocator's (temporaries)",
    ('core/comm/watchdog.c', 'xdev_last_error'): "quotes the backend's asynchronous error in the group's",
    ('core/comm/communicator.c', 'xdev_last_error'): "quotes the backend's failure after the group's abort reason",
    ('core/interop/dlpack.c', 'xdev_last_error'): "quotes why the tensor's backend is not usable",
    ('core/interop/foreign.c', 'xdev_last_error'): "quotes the failed wait in its own message",
    ('core/alloc/dlpack_exports.c', 'xdev_host_free'): "the free the program asked for, put off until the consumer's deleter",
    ('core/alloc/alloc_sleep.c', 'xdev_host_alloc'): "KEEP's copy of sleeping memory from the pinned host cache (pinning costs more than the copy)",
    ('core/alloc/alloc_sleep.c', 'xdev_host_free'): "a woken segment's copy back to the pinned host cache, for the next sleep",
    ('core/alloc/alloc_sleep.c', 'xdev_last_error'): "quotes the pinned allocation's and the mapping's failure in its own message",
    ('core/comm/comm_procs.c', 'xdev_last_error'): "quotes the transport loader's refusal of a damaged id's name",
    ('core/comm/shm_comm.c', 'xdev_last_error'): "hands its own failure's message to the transport table's err",
    # the element-wise helper is a client of the kernel API it sits beside (xdev/kernel.h):
    # compiling, finding and (on failure) unloading its generated kernel.
    ('core/kernel/elementwise.c', 'xdev_module_compile'): 'compiles the generated kernel',
    ('core/kernel/elementwise.c', 'xdev_module_get_kernel'): 'finds the generated kernel',
    ('core/kernel/elementwise.c', 'xdev_module_unload'): 'drops a module whose kernel is missing',
    ('core/kernel/elementwise.c', 'xdev_last_error'): "quotes the compile's message as its own",
    ('core/kernel/launch.c', 'xdev_last_error'): "says which kernel's argument the lookup's message is about",
    ('core/kernel/module.c', 'xdev_last_error'): "quotes a backend's load failure, prefixed "
        'with the device, after the module is released',
    ('core/math/rng_generator.c', 'xdev_last_error'): "quotes a state's decode message",
    ('core/alloc/caching_allocator.c', 'xdev_last_error'): "keeps the backend's OOM message",
    ('core/alloc/device_allocator.c', 'xdev_last_error'): "quotes a direct free's failed wait",
    ('core/alloc/managed.c', 'xdev_last_error'): "quotes a managed free's failed wait",
    ('core/alloc/host_allocator.c', 'xdev_last_status'): 'the status live_block just set, '
        'raised after unlocking',
    ('core/runtime/plugin_loader.c', 'xdev_last_error'): "a plugin's load failure into its reason",
    ('core/runtime/registry.c', 'xdev_last_error'): "a backend's failure into its reason",
    ('core/runtime/visible.c', 'xdev_last_error'): "quotes the backend's failure to report a UUID in the backend's reason",
    # real calls of the public API: each sets the thread's message with its own prefix
    # (the callers save and restore the error state, or pass the status on).
    ('core/comm/comm_cache.c', 'xdev_communicator_init_all'):
        "reduce_add's cached NCCL group is made by the public init (error state restored)",
    ('core/comm/local_comm.c', 'xdev_group_start'):
        "broadcast and reduce_add through the cached group, as torch.cuda.comm's do",
    ('core/comm/local_comm.c', 'xdev_group_end'):
        "broadcast and reduce_add through the cached group, as torch.cuda.comm's do",
    ('core/observe/alloc_snapshot.c', 'xdev_memory_stats_items'):
        "a snapshot's device_stats take torch's key names from the public key/value view",
    ('core/alloc/device_allocator.c', 'xdev_stream_wait_stream'):
        "a free orders the block's stream after every stream that used it (best effort)",
    ('core/runtime/stream.c', 'xdev_device_guard_begin'):
        'the stream guard is a device guard plus the current stream',
    ('core/runtime/stream.c', 'xdev_device_guard_end'):
        'the stream guard is a device guard plus the current stream',
}

# core-layers: (core file, function of a higher folder it calls, or header it includes) -> why.
# Empty: what runtime/ needs of alloc/ and observe/ (the allocator's settings at
# initialisation, a thread's exit, XDEV_TRACE_FILE, the tracer's and the sanitizer's probes)
# those folders register when libxdev loads (runtime/hooks.h, trace_probe.h, sanitizer_probe.h);
# what alloc/ needs of interop/ (an IPC mapping's live extent, record_stream of foreign memory)
# interop/ sets before it inserts its first range (alloc/pointer_registry.h's origin ops).
CORE_UPWARD = {
}
# Bottom to top. observe/ (the tracer, the stream-order sanitizer, snapshots, the views and
# their writers) reads the state of the folders below it and nothing calls it: they reach it
# through runtime's hooks and probes.
LAYERS = ('base', 'runtime', 'alloc', 'memory', 'interop', 'kernel', 'math', 'comm', 'graph',
          'observe')

# test-env: XDEV_* variables the library reads that the tests do not unset -> why.
TEST_ENV_PASS_THROUGH = {
    'XDEV_NCCL_PATH': 'tests/gpu/run.sh points it at the NCCL it found for the whole run',
    'XDEV_RCCL_PATH': 'likewise for RCCL on an AMD host (the HIP twin of XDEV_NCCL_PATH)',
}


# ------------------------------------------------------------------ C text helpers
def strip_c(text):
    """Comments and the insides of string/char literals blanked; newlines and offsets kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + text[j - 1:j])
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def read(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read()


def line_of(text, pos):
    return text.count('\n', 0, pos) + 1


C_EXT = ('.c', '.h', '.cu', '.cpp', '.cc', '.hpp')


# ------------------------------------------------------------------ core-includes
def check_core_includes():
    rule = 'core-includes'
    seen = set()
    inc = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
    core_root = os.path.realpath('core')
    for f in FILES:
        if f.startswith('core/') or not f.endswith(C_EXT):
            continue
        text = read(f)
        for m in inc.finditer(text):
            name = m.group(1)
            local = os.path.join(os.path.dirname(f), name)
            if os.path.exists(local):
                target = os.path.realpath(local)
                if not (target + '/').startswith(core_root + '/'):
                    continue  # a header beside the file, not core's
                name = os.path.relpath(target, core_root)
            elif name.startswith('core/'):
                name = name[len('core/'):]
            elif not (name.split('/')[0] in LAYERS and os.path.exists(os.path.join('core', name))):
                continue
            key = (f, name)
            seen.add(key)
            if key not in CORE_INCLUDE_EXCEPTIONS:
                report(f, line_of(text, m.start()), rule,
                       f'includes core header {name}: outside core/ only include/ is public '
                       '(a white-box exception goes in CORE_INCLUDE_EXCEPTIONS with its reason)')
    for (f, name), why in CORE_INCLUDE_EXCEPTIONS.items():
        if (f, name) not in seen:
            report(f, 1, rule, f'listed exception for {name} ({why}) no longer matches: '
                   'remove it from CORE_INCLUDE_EXCEPTIONS')


# ------------------------------------------------------------------ core-calls
def public_api():
    """name -> header of every XDEV_API function in include/xdev/*.h."""
    api = {}
    for h in FILES:
        if not (h.startswith('include/xdev/') and h.endswith('.h')):
            continue
        t = strip_c(read(h))
        for m in re.finditer(r'\bXDEV_API\b([^;{]*?)\b([A-Za-z_]\w*)\s*\(', t):
            api[m.group(2)] = h
    return api


TOKEN = re.compile(r'[{}();=]|[A-Za-z_]\w*')


def calls_in(path, api):
    """(line, callee, calling function) for each call of a public function in a C file.
    Reserved names (__attribute__, ...) are never callees: XDEV_API's definition and a
    constructor's head would otherwise make __attribute__ a function."""
    raw = strip_c(read(path))
    lines = raw.split('\n')
    found = []
    # Preprocessor lines: calls in a macro body belong to the macro; then blank the lines.
    macro = None
    for i, line in enumerate(lines):
        if macro is not None or line.lstrip().startswith('#'):
            if macro is None:
                m = re.match(r'\s*#\s*define\s+(\w+)', line)
                macro = ('macro ' + m.group(1)) if m else ''
            if macro:
                for m in re.finditer(r'\b([A-Za-z_]\w*)\s*\(', line):
                    if m.group(1) in api and not m.group(1).startswith('__'):
                        found.append((i + 1, m.group(1), macro))
            macro = macro if line.rstrip().endswith('\\') else None
            lines[i] = ' ' * len(line)
    text = '\n'.join(lines)
    depth, start, cur = 0, 0, None
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        if tok == '{':
            if depth == 0:
                head = re.sub(r'__attribute__\s*\(\(.*?\)\)', ' ', text[start:m.start()], flags=re.S)
                fm = re.match(r'[^(=]*?\b([A-Za-z_]\w*)\s*\(', head)
                cur = fm.group(1) if fm and re.search(r'\)\s*$', head) else None
            depth += 1
        elif tok == '}':
            depth = max(depth - 1, 0)
            if depth == 0:
                start, cur = m.end(), None
        elif tok == ';':
            if depth == 0:
                start = m.end()
        elif (depth > 0 and tok in api and not tok.startswith('__')
              and re.match(r'\s*\(', text[m.end():])):
            found.append((line_of(text, m.start()), tok, cur or '(file scope)'))
    return found


def check_core_calls():
    rule = 'core-calls'
    api = public_api()
    core = [f for f in FILES if f.startswith('core/') and f.endswith(('.c', '.h'))]
    defined_in = {}
    for f in core:
        t = strip_c(read(f))
        for m in re.finditer(r'^[^\n;{}#]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{', t, re.M):
            if m.group(1) in api:
                defined_in.setdefault(m.group(1), set()).add(f)
    seen = set()
    for f in core:
        for line, callee, caller in calls_in(f, api):
            if f in defined_in.get(callee, ()):
                continue  # the callee's own file
            if caller in api and api[caller] == api[callee]:
                continue  # a public function delegating to another of its own header
            seen.add((f, callee))
            if (f, callee) not in CORE_PUBLIC_CALLS:
                report(f, line, rule,
                       f'{caller} calls the public {callee} ({api[callee]}): core calls internal '
                       'entry points (xdev_core_*, dispatch helpers); if it must, list it in '
                       'CORE_PUBLIC_CALLS with the reason')
    for (f, callee), why in CORE_PUBLIC_CALLS.items():
        if (f, callee) not in seen:
            report(f, 1, rule, f'listed call of {callee} ({why}) no longer made: '
                   'remove it from CORE_PUBLIC_CALLS')


# ------------------------------------------------------------------ core-layers
def layer(path):
    """A folder's place in LAYERS; a file at core/'s top (wiring.c, the list of what starts)
    sits above every folder: it may call them all, none may call it."""
    parts = path.split('/')
    if len(parts) == 2 and parts[0] == 'core':
        return len(LAYERS)
    return LAYERS.index(parts[1]) if len(parts) > 2 and parts[1] in LAYERS else -1


def check_core_layers():
    rule = 'core-layers'
    core = [f for f in FILES if f.startswith('core/') and f.endswith(('.c', '.h'))]
    defs, own = {}, {}  # external function -> defining files; file -> every function it defines
    for f in core:
        t = strip_c(read(f))
        for m in re.finditer(r'^(?![ \t])[^\n;{}#()]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{', t, re.M):
            own.setdefault(f, set()).add(m.group(1))
            if f.endswith('.c') and not m.group(0).startswith('static'):
                defs.setdefault(m.group(1), set()).add(f)
    seen = set()
    inc = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
    for f in core:
        lf = layer(f)
        text = read(f)
        for m in inc.finditer(text):
            if layer('core/' + m.group(1)) > lf:
                seen.add((f, m.group(1)))
                if (f, m.group(1)) not in CORE_UPWARD:
                    report(f, line_of(text, m.start()), rule,
                           f'includes {m.group(1)}, from a folder above {LAYERS[lf]}/ (core '
                           'depends downwards: ' + ', '.join(reversed(LAYERS)) + ')')
        for line, callee, caller in calls_in(f, defs):
            if callee in own.get(f, ()):
                continue
            for d in sorted(defs[callee]):
                if layer(d) > lf:
                    seen.add((f, callee))
                    if (f, callee) not in CORE_UPWARD:
                        report(f, line, rule, f'{caller} calls {callee} of {d}, a folder above '
                               f'{LAYERS[lf]}/: an upward call (if it must be, list it in '
                               'CORE_UPWARD with the reason and name it in core/README.md)')
    for (f, what), why in CORE_UPWARD.items():
        if (f, what) not in seen:
            report(f, 1, rule, f'listed upward {what} ({why}) no longer found: remove it from '
                   'CORE_UPWARD and core/README.md')


# ------------------------------------------------------------------ format
def check_format():
    rule = 'format'
    dirs = ('core/', 'backends/', 'include/', 'tests/', 'tools/', 'bench/', 'examples/')
    targets = [f for f in FILES if f.startswith(dirs) and f.endswith(C_EXT)]
    try:
        ver = subprocess.run(['clang-format', '--version'], capture_output=True, text=True).stdout
    except FileNotFoundError:
        report('.clang-format', 1, rule, 'clang-format not found (cmake/install-deps.sh installs it)')
        return
    m = re.search(r'version (\d+)', ver)
    if m and m.group(1) != '14':
        print(f'check_tree.sh: note: clang-format {m.group(1)}, the style is written for 14; '
              'differences may be the version', file=sys.stderr)
    r = subprocess.run(['clang-format', '--dry-run', '--Werror', '--style=file'] + targets,
                       capture_output=True, text=True)
    per_file = {}
    for line in r.stderr.splitlines():
        m = re.match(r'(.+?):(\d+):\d+: (?:error|warning): (.*)', line)
        if m and m.group(2) not in per_file.setdefault(m.group(1), []):
            per_file[m.group(1)].append(m.group(2))
    for f, where in sorted(per_file.items()):
        for ln in where[:20]:
            report(f, ln, rule, f'not clang-format clean (clang-format -i {f})')
        if len(where) > 20:
            report(f, where[20], rule, f'... and {len(where) - 21} more places in this file')
    if r.returncode != 0 and not per_file:
        report('.clang-format', 1, rule, 'clang-format failed: ' + r.stderr.strip()[:300])


# ------------------------------------------------------------------ test-env
def check_test_env():
    rule = 'test-env'
    read_vars = {}  # name -> (file, line)
    src = [f for f in FILES if f.startswith(('core/', 'backends/')) and f.endswith(C_EXT)]
    prefixes = []
    for f in src:
        t = read(f)
        for m in re.finditer(r'#\s*define\s+XC_ENV\(\w+\)\s+"(XDEV_\w+_)"', t):
            prefixes.append(m.group(1))
    for f in src:
        t = read(f)
        pats = [(r'\b(?:getenv|get_env|env|xdev_env_\w+)\s*\(\s*"(XDEV_[A-Z0-9_]+)"', ''),
                (r'#\s*define\s+\w*_ENV\s+"(XDEV_[A-Z0-9_]+)"', '')]
        for pat, _ in pats:
            for m in re.finditer(pat, t):
                read_vars.setdefault(m.group(1), (f, line_of(t, m.start())))
        for m in re.finditer(r'\bXC_ENV\(\s*"([A-Z0-9_]+)"\s*\)', t):
            for p in prefixes:
                read_vars.setdefault(p + m.group(1), (f, line_of(t, m.start())))
    cm = read('tests/CMakeLists.txt')
    m = re.search(r'set\(XDEV_TEST_ENV_VARS\s+([^)]*)\)', cm)
    if not m:
        report('tests/CMakeLists.txt', 1, rule, 'no set(XDEV_TEST_ENV_VARS ...) found')
        return
    unset = set(m.group(1).split())
    at = line_of(cm, m.start())
    config = read('docs/configuration.md')
    env_section = re.search(r'^## Environment variables\n(.*?)(?=^## |\Z)', config, re.S | re.M)
    env_text = env_section.group(1) if env_section else ''
    for name, (f, line) in sorted(read_vars.items()):
        if name not in unset and name not in TEST_ENV_PASS_THROUGH:
            report(f, line, rule, f'{name} is read but tests do not unset it: add it to '
                   f'XDEV_TEST_ENV_VARS (tests/CMakeLists.txt:{at}) or, with the reason, to '
                   'TEST_ENV_PASS_THROUGH')
        if f'`{name}`' not in env_text:
            report(f, line, rule, f"{name} is read but docs/configuration.md's environment "
                   'section does not name it')
    for name, why in TEST_ENV_PASS_THROUGH.items():
        if name not in read_vars:
            report('tests/CMakeLists.txt', at, rule, f'pass-through {name} ({why}) is no longer '
                   'read: remove it from TEST_ENV_PASS_THROUGH')
        if name in unset:
            report('tests/CMakeLists.txt', at, rule, f'{name} is both unset for tests and listed '
                   'as passed through')


# ------------------------------------------------------------------ spdx
SPDX = 'SPDX-License-Identifier: Apache-2.0'
SPDX_EXT = C_EXT + ('.cmake', '.sh', '.py', '.html', '.h.in', '.cmake.in', '.pc.in')


def spdx_file(f):
    base = os.path.basename(f)
    if f.endswith(SPDX_EXT) or base == 'CMakeLists.txt':
        return True
    try:
        with open(f, 'rb') as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b'#!') and re.search(rb'\b(ba)?sh\b|python', first) is not None


def check_spdx():
    rule = 'spdx'
    for f in FILES:
        if not spdx_file(f):
            continue
        with open(f, encoding='utf-8', errors='replace') as fh:
            head = [fh.readline() for _ in range(3)]
        if not any(SPDX in line for line in head):
            report(f, 1, rule, f'no "{SPDX}" in the first 3 lines (tools/add_spdx.sh adds it)')


# ------------------------------------------------------------------ abi-version
# "the backend ABI (3.3" / "(ABI 3.3)" / "backend ABI 3.3;" claim the current version.
ABI_CLAIM = re.compile(r'(?:backend ABI|slots) \(?(?:ABI )?(\d+)\.(\d+)(?=[);,])')


def check_abi_version():
    rule = 'abi-version'
    h = read('include/xdev/backend.h')
    major = re.search(r'#define XDEV_BACKEND_ABI_MAJOR (\d+)u', h)
    minor = re.search(r'#define XDEV_BACKEND_ABI_MINOR (\d+)u', h)
    if not major or not minor:
        report('include/xdev/backend.h', 1, rule, 'XDEV_BACKEND_ABI_MAJOR/MINOR not found')
        return
    now = (major.group(1), minor.group(1))
    for f in FILES:
        if not f.endswith(C_EXT + ('.md',)) or f.startswith('CHANGELOG'):
            continue
        t = read(f)
        for m in ABI_CLAIM.finditer(t):
            before = t[max(0, m.start() - 6):m.start()].lower()
            if 'since' in before or (m.group(1), m.group(2)) == now:
                continue
            report(f, line_of(t, m.start()), rule,
                   f'says the backend ABI is {m.group(1)}.{m.group(2)}; backend.h defines '
                   f'{now[0]}.{now[1]} (drop the number or write the current one)')


# ------------------------------------------------------------------ wiring
WIRING = 'core/wiring.c'


def libxdev_sources():
    """The C files built into libxdev (CMakeLists.txt: core/, backends/cpu/, backends/plugins.c)."""
    return [f for f in FILES if f.endswith(('.c', '.h')) and
            (f.startswith(('core/', 'backends/cpu/')) or f == 'backends/plugins.c')]


def check_wiring():
    rule = 'wiring'
    ctor = re.compile(r'__attribute__\s*\(\(\s*(constructor|destructor)\b')
    wire_def = re.compile(r'^(?!static)[^\n;{}#()]*?\b(xdev_\w+_wire)\s*\(\s*void\s*\)\s*\{', re.M)
    wires = {}
    for f in libxdev_sources():
        t = strip_c(read(f))
        if f != WIRING:
            for m in ctor.finditer(t):
                report(f, line_of(t, m.start()), rule,
                       f'a {m.group(1)} outside {WIRING}: what runs when libxdev loads is one '
                       f'list - export xdev_<part>_wire() and call it from {WIRING}')
        for m in wire_def.finditer(t):
            wires[m.group(1)] = (f, line_of(t, m.start()))
    if not os.path.exists(WIRING):
        report(WIRING, 1, rule, 'missing: the one list of what libxdev starts')
        return
    listed = strip_c(read(WIRING))
    for name, (f, line) in sorted(wires.items()):
        if not re.search(r'\b' + name + r'\s*\(\s*\)', listed):
            report(f, line, rule, f'{name} is not called by {WIRING}: this part never starts')


# ------------------------------------------------------------------ table-lists
SLOTS_H = 'include/xdev/backend_slots.h'


def optional_tables():
    """The tables of XDEV_BACKEND_TABLES in order, less those with a REQUIRED slot."""
    t = read(SLOTS_H)
    m = re.search(r'^#define XDEV_BACKEND_TABLES\(T\)[^\n]*\\\n(?:[^\n]*\\\n)*[^\n]*', t, re.M)
    if not m:
        return None
    tables = re.findall(r'\bT\((\w+),', m.group(0))
    required = set(re.findall(r'\bX\((\w+), \w+, REQUIRED,', t))
    return [x for x in tables if x not in required]


def check_table_lists():
    rule = 'table-lists'
    optional = optional_tables()
    if not optional:
        report(SLOTS_H, 1, rule, 'XDEV_BACKEND_TABLES not found')
        return
    name = '(?:' + '|'.join(optional) + r')\b'
    sep = r'(?:,?\s*(?:\*\s+)?(?:and |or )?)'
    listing = re.compile(r'\b[Oo]ptional(?: tables)?\s*\(?\s*(' + name + '(?:' + sep + name + ')+)')
    for f in FILES:
        if not f.endswith(C_EXT + ('.md',)) or f.startswith('CHANGELOG'):
            continue
        t = read(f)
        for m in listing.finditer(t):
            names = re.findall(name, m.group(1))
            if len(names) >= 3 and names != optional:
                missing = [x for x in optional if x not in names]
                report(f, line_of(t, m.start()), rule,
                       'lists the optional backend tables as ' + ', '.join(names) + '; '
                       f'{SLOTS_H} has ' + ', '.join(optional) +
                       (' (missing: ' + ', '.join(missing) + ')' if missing else ' (the order)'))


CHECKS = {'core-includes': check_core_includes, 'core-layers': check_core_layers,
          'core-calls': check_core_calls, 'format': check_format, 'test-env': check_test_env,
          'spdx': check_spdx, 'abi-version': check_abi_version, 'wiring': check_wiring,
          'table-lists': check_table_lists}
for r in RULES:
    before = bad
    CHECKS[r]()
    print(f'check_tree.sh: {r}: ' + ('ok' if bad == before else f'{bad - before} violation(s)'),
          file=sys.stderr)
sys.exit(1 if bad else 0)
PY
