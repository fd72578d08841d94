#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# install_test.sh BUILD_DIR CONSUMER_SRC WORK_DIR VERSION [EXTRA_CFLAGS]
#
# Installs the build tree into WORK_DIR/prefix, then builds the consumer in
# CONSUMER_SRC against it twice - with find_package(xdev) and with
# `pkg-config xdev` - and runs both. Checks that xdev.pc is relocatable, that
# its paths render clean (no "//") and land on the installed directories, and
# that Cflags and Libs carry -pthread, and that the generated xdev/version.h
# (of VERSION) and LICENSE are installed. The find_package consumer also
# builds a kernel file with the installed xdev_add_kernels() and runs it on the
# CPU backend: the bundle must list both kernels with their parameter counts,
# and a fatbin / HIP code object where the consumer's configure found nvcc /
# hipcc. Then the documentation's recipes as the installed pages write them (each the
# fenced block after "<!-- install-test: MARKER -->"): docs/building.md's pkg-config
# recipe builds and starts the README's quick start with no LD_LIBRARY_PATH, and
# docs/kernels.md's Makefile builds a kernel program with the installed xdev-kernels
# (CPU only: XDEV_KERNELS_FLAGS="--no-cuda --no-hip"; its path from xdev.pc's
# xdev_kernels), which also must refuse bad input clearly; every relative link of the
# installed Markdown pages must land on an installed file. Exits 77 (skip) only when
# pkg-config is missing.
set -eu
build=$1 consumer=$2 work=$3 version=$4 extra_cflags=${5:-}

if ! command -v pkg-config >/dev/null 2>&1; then
    echo "SKIP: pkg-config not found; cannot test the installed xdev.pc"
    exit 77
fi
cc=${CC:-cc}

fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install failed"; }

test -f "$prefix/include/xdev/xdev.h" || fail "headers not installed"
# xdev/version.h is generated from project(VERSION); its template stays behind.
grep -qxF "#define XDEV_VERSION_STRING \"$version\"" "$prefix/include/xdev/version.h" ||
    fail "include/xdev/version.h missing or not for version $version"
test -z "$(find "$prefix/include" -name '*.in')" || fail "a header template (*.in) was installed"
test -n "$(find "$prefix/share/doc" -name LICENSE 2>/dev/null)" || fail "LICENSE not installed under share/doc"
docdir=$(dirname "$(find "$prefix/share/doc" -name LICENSE | head -n 1)")
for f in README.md docs/kernels-cmake.md examples/heat.c examples/device_agnostic.c; do
    test -f "$docdir/$f" || fail "$f not installed under $docdir"
done
lib=$(find "$prefix" -name 'libxdev.so' | head -n 1)
test -n "$lib" || fail "libxdev.so not installed"
libdir=$(dirname "$lib")
test -f "$libdir/cmake/xdev/xdevConfig.cmake" || fail "xdevConfig.cmake not in $libdir/cmake/xdev"
test -f "$libdir/pkgconfig/xdev.pc" || fail "xdev.pc not in $libdir/pkgconfig"
test -f "$libdir/cmake/xdev/xdevKernels.cmake" || fail "xdevKernels.cmake not in $libdir/cmake/xdev"
soname=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
case $soname in libxdev.so.*) ;; *) fail "libxdev.so has no SONAME (got '$soname')" ;; esac
test -e "$libdir/$soname" || fail "SONAME file $soname not installed"
# Plugins live in lib/xdev/, not beside libxdev; libxdev looks there first.
test -z "$(find "$libdir" -maxdepth 1 -name 'libxdev-*.so')" ||
    fail "a plugin was installed beside libxdev: $(find "$libdir" -maxdepth 1 -name 'libxdev-*.so')"
for p in "$build"/lib/libxdev-*.so; do
    [ -e "$p" ] || continue
    test -f "$libdir/xdev/$(basename "$p")" || fail "$(basename "$p") not installed in $libdir/xdev"
done
# cuda,cpu: the cuda plugin is tried even where auto passes over it (no NVIDIA driver).
log=$(env -u XDEV_PLUGIN_PATH XDEV_BACKEND=cuda,cpu XDEV_LOG=1 LD_LIBRARY_PATH="$libdir" "$prefix/bin/xdev-info" 2>&1 >/dev/null) ||
    fail "installed xdev-info failed: $log"
echo "$log" | grep -qxF "xdev: plugins are looked for in $libdir/xdev" ||
    fail "libxdev does not look for plugins in $libdir/xdev: $log"
if ls "$libdir"/xdev/libxdev-cuda.so >/dev/null 2>&1; then
    echo "$log" | grep -q "^xdev: backend cuda: .*$libdir/xdev/libxdev-cuda.so" ||
        fail "the installed cuda plugin was not the one tried: $log"
fi

check_output() { # $1: label, $2: output
    echo "$2"
    echo "$2" | grep -q "^xdev $version\$" || fail "$1: version line 'xdev $version' missing"
    echo "$2" | grep -q "^devices: 3 cpu\$" || fail "$1: expected 'devices: 3 cpu'"
}
export XDEV_BACKEND=cpu XDEV_CPU_DEVICES=3
unset XDEV_PLUGIN_PATH XDEV_VISIBLE_DEVICES XDEV_CPU_MEMORY XDEV_LAUNCH_BLOCKING || true

echo "== find_package(xdev)"
cmake -S "$consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DXDEV_EXPECTED_VERSION="$version" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$extra_cflags" \
    -DCMAKE_EXE_LINKER_FLAGS="$extra_cflags" >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "configuring the consumer failed"; }
cmake --build "$work/cmake-build" >>"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "building the consumer failed"; }
out=$(LD_LIBRARY_PATH="$libdir" "$work/cmake-build/xdev_consumer") || fail "cmake consumer failed"
check_output find_package "$out"

echo "== xdev_add_kernels (installed)"
out=$(LD_LIBRARY_PATH="$libdir" "$work/cmake-build/xdev_consumer_kernels") ||
    { echo "$out"; fail "kernel consumer failed"; }
echo "$out"
expect() { echo "$out" | grep -qxF "$1" || fail "kernel consumer: expected the line '$1'"; }
expect "kernel consumer_axpy params 4"
expect "kernel consumer_sum params 3 sync"
expect "kernels ran: consumer_axpy consumer_sum (sum 6994)"
# One image per kernel file and toolchain the consumer's configure found.
cache=$work/cmake-build/CMakeCache.txt
nimages=0
for tool in NVCC:fatbin HIPCC:hip; do
    if grep -q "^XDEV_${tool%%:*}:FILEPATH=/" "$cache"; then
        echo "$out" | grep -q "^image ${tool#*:} [1-9][0-9]* bytes\$" ||
            fail "kernel consumer: ${tool%%:*} was found but the bundle has no ${tool#*:} image"
        nimages=$((nimages + 1))
    fi
done
expect "bundle consumer_kernels: 2 kernels, $nimages images"

echo "== pkg-config xdev"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs xdev) || fail "pkg-config --cflags --libs xdev failed"
echo "pkg-config: $flags"
pcv=$(pkg-config --modversion xdev)
test "$pcv" = "$version" || fail "xdev.pc version '$pcv', expected '$version'"
case $flags in *"$prefix"*) ;; *) fail "xdev.pc does not point into the install prefix $prefix (relocation): $flags" ;; esac
# Paths render clean: no doubled slash, no trailing slash, and each -I/-L
# lands on the installed include directory and libdir.
for var in prefix libdir includedir; do
    v=$(pkg-config --variable=$var xdev)
    case $v in *//* | */) fail "xdev.pc: $var renders as '$v' (doubled or trailing slash)" ;; esac
done
case $flags in *//*) fail "pkg-config flags hold a doubled slash: $flags" ;; esac
real_prefix=$(cd "$prefix" && pwd -P)
for f in $flags; do
    case $f in
    -I*) test "$(cd "${f#-I}" && pwd -P)" = "$real_prefix/include" ||
        fail "xdev.pc: $f is not $prefix/include" ;;
    -L*) test "$(cd "${f#-L}" && pwd -P)" = "$(cd "$libdir" && pwd -P)" ||
        fail "xdev.pc: $f is not $libdir" ;;
    esac
done
# Threads: -pthread for compiling and linking (see cmake/xdev.pc.in).
case " $(pkg-config --libs xdev) " in *" -pthread "*) ;; *) fail "xdev.pc: Libs lacks -pthread" ;; esac
case " $(pkg-config --cflags xdev) " in *" -pthread "*) ;; *) fail "xdev.pc: Cflags lacks -pthread" ;; esac
# shellcheck disable=SC2086
$cc $extra_cflags "$consumer/main.c" -o "$work/pc-consumer" $flags ||
    fail "building the consumer with pkg-config flags failed"
out=$(LD_LIBRARY_PATH="$libdir" "$work/pc-consumer") || fail "pkg-config consumer failed"
check_output pkg-config "$out"

# The documentation's recipes, run as the installed pages write them: the fenced block after
# a line "<!-- install-test: MARKER -->". Their `cc` and `make` are the test's compiler with
# the build's sanitizer flags (a `cc` first on PATH); nothing sets LD_LIBRARY_PATH.
recipe() { # FILE MARKER
    awk -v m="<!-- install-test: $2 -->" 'inb && /^```/ { exit } inb { print } found && /^```/ { inb = 1 } $0 == m { found = 1 }' "$1"
}
mkdir -p "$work/bin"
printf '#!/bin/sh\nexec %s %s "$@"\n' "$cc" "$extra_cflags" > "$work/bin/cc"
chmod +x "$work/bin/cc"
# The README's quick start (the block the docs test runs) is the program the recipes build.
awk '/^<!-- docs-test: run -->/ { next_block = 1; next } next_block && /^```c/ { inb = 1; next }
     inb && /^```/ { exit } inb { print }' "$docdir/README.md" > "$work/quickstart.c"
grep -q 'main(' "$work/quickstart.c" || fail "no quick start program found in the installed README.md"

echo "== the pkg-config recipe of docs/building.md, as written"
rdir=$work/recipe
rm -rf "$rdir" && mkdir -p "$rdir"
recipe "$docdir/docs/building.md" pkg-config | sed "s#/opt/xdev/lib/pkgconfig#$libdir/pkgconfig#" > "$rdir/recipe.sh"
grep -q 'pkg-config' "$rdir/recipe.sh" || fail "docs/building.md has no pkg-config recipe marked '<!-- install-test: pkg-config -->'"
cat "$rdir/recipe.sh"
cp "$work/quickstart.c" "$rdir/app.c"
out=$(cd "$rdir" && env -u LD_LIBRARY_PATH PATH="$work/bin:$PATH" sh -e recipe.sh 2>&1) ||
    { echo "$out"; fail "the pkg-config recipe of docs/building.md failed as written"; }
echo "$out"
echo "$out" | grep -qx 'quickstart: C\[0\] = 128 on cpu:0 (ok)' || fail "the recipe's ./app did not print the quick start's result"
out=$(cd "$rdir" && env -u LD_LIBRARY_PATH ./app 2>&1) || { echo "$out"; fail "the recipe's program does not start on its own"; }

echo "== xdev-kernels (installed)"
xk=$(pkg-config --variable=xdev_kernels xdev) || fail "pkg-config --variable=xdev_kernels xdev failed"
test -x "$xk" || fail "xdev-kernels not installed at $xk (xdev.pc's xdev_kernels)"
test "$(cd "$(dirname "$xk")" && pwd -P)" = "$(cd "$prefix/bin" && pwd -P)" ||
    fail "xdev.pc: xdev_kernels is '$xk', not in $prefix/bin"
"$xk" --help | grep -q '^usage: xdev-kernels --name NAME' || fail "xdev-kernels --help"
kdir=$work/xk
rm -rf "$kdir" && mkdir -p "$kdir"
rc=0; msg=$("$xk" 2>&1) || rc=$?
[ $rc -eq 2 ] && echo "$msg" | grep -q -- '--name NAME is required' || fail "xdev-kernels without arguments: exit $rc, '$msg'"
rc=0; msg=$("$xk" --name 9x "$consumer/consumer_kernels.c" 2>&1) || rc=$?
[ $rc -eq 2 ] && echo "$msg" | grep -q "is not a C identifier" || fail "xdev-kernels --name 9x: exit $rc, '$msg'"
printf 'int not_a_kernel;\n' > "$kdir/empty.c"
rc=0; msg=$(cd "$kdir" && "$xk" --name e --no-cuda --no-hip empty.c 2>&1) || rc=$?
[ $rc -eq 1 ] && echo "$msg" | grep -q "empty.c declares no kernel" || fail "a file without kernels: exit $rc, '$msg'"
cp "$consumer/consumer_kernels.c" "$kdir/a.c"
cp "$consumer/consumer_kernels.c" "$kdir/b.c"
rc=0; msg=$(cd "$kdir" && "$xk" --name d --no-cuda --no-hip a.c b.c 2>&1) || rc=$?
[ $rc -eq 1 ] && echo "$msg" | grep -q "kernel 'consumer_.*' is declared in both a.c and b.c" ||
    fail "a kernel in two files: exit $rc, '$msg'"
printf 'XDEV_KERNEL(broken\n' > "$kdir/broken.c"
rc=0; msg=$(cd "$kdir" && "$xk" --name b --no-cuda --no-hip broken.c 2>&1) || rc=$?
[ $rc -eq 1 ] && echo "$msg" | grep -q "the host compile of broken.c failed" || fail "a file that does not compile: exit $rc, '$msg'"

echo "== the Makefile of docs/kernels.md, as written (CPU only: XDEV_KERNELS_FLAGS)"
mdir=$work/make
rm -rf "$mdir" && mkdir -p "$mdir"
recipe "$docdir/docs/kernels.md" makefile > "$mdir/Makefile"
grep -q 'xdev_kernels' "$mdir/Makefile" || fail "docs/kernels.md has no Makefile marked '<!-- install-test: makefile -->'"
cp "$consumer/consumer_kernels.c" "$mdir/my_kernels.c"
sed 's/consumer_kernels/my_kernels/g' "$consumer/kernels_main.c" > "$mdir/app.c"
if command -v make >/dev/null 2>&1; then
    (cd "$mdir" && env -u LD_LIBRARY_PATH -u CC PATH="$work/bin:$PATH" make XDEV_KERNELS_FLAGS="--no-cuda --no-hip") ||
        fail "the Makefile of docs/kernels.md failed as written"
    out=$(cd "$mdir" && env -u LD_LIBRARY_PATH ./app) || { echo "$out"; fail "the Makefile's program failed"; }
    echo "$out"
    expect "bundle my_kernels: 2 kernels, 0 images"
    expect "kernel consumer_axpy params 4"
    expect "kernels ran: consumer_axpy consumer_sum (sum 6994)"
else
    echo "SKIP: no make here: the Makefile of docs/kernels.md is not built"
fi

echo "== every relative link of the installed documentation"
broken=""
for md in $(find "$docdir" -name '*.md' | sort); do
    for target in $(grep -o '](\([^) ]*\))' "$md" | sed 's/^](//; s/)$//'); do
        case $target in http://* | https://* | mailto:* | '#'*) continue ;; esac
        path=${target%%#*}
        [ -e "$(dirname "$md")/$path" ] || broken="$broken ${md#"$docdir"/}->$target"
    done
done
[ -z "$broken" ] || fail "installed docs link to files that are not installed:$broken"
echo "PASS"
