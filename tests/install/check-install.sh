#!/bin/bash
# check-install.sh BUILD - `make install` into a scratch DESTDIR, then build
# and run a program against the installed header, library and hugekv.pc
# only: the soname link, the pkg-config file and the exported API.
set -euo pipefail
build=${1:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
prefix=/opt/hugekv
make -s -C "$top" BUILD="$build" install DESTDIR="$dest" PREFIX="$prefix" >/dev/null
lib=$dest$prefix/lib
test -L "$lib/libhugekv.so" && test -L "$lib/libhugekv.so.0"
test "$(readelf -d "$lib/libhugekv.so.0" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = libhugekv.so.0
cat > "$dest/use.c" <<'C'
#include <hugekv.h>
#include <errno.h>
int main(void)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 1000, .nlanes = 2 };
	struct hkv_extent e[4];
	struct hkv_pool *p;

	if (hkv_pool_create(&o, &p))
		return 1;
	if (hkv_alloc(p, 300, HKV_LANE_ANY, 0, e, 4) != 1 || hkv_available(p) != 700)
		return 2;
	if (hkv_free(p, e, 1) || hkv_check(p) || hkv_alloc(p, 0, 0, 0, e, 4) != -EINVAL)
		return 3;
	hkv_pool_destroy(p);
	return 0;
}
C
# the installed hugekv.pc, and the system's .pc files it requires (numa)
syspc=$(pkg-config --variable pc_path pkg-config)
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$lib/pkgconfig:$syspc
cc -Wall -Werror $(pkg-config --cflags hugekv) "$dest/use.c" $(pkg-config --libs hugekv) \
	-o "$dest/use"
LD_LIBRARY_PATH=$lib "$dest/use"
# a static link: what pkg-config --static names (libnuma through the
# system's numa.pc where it has one) is all libhugekv.a needs
pcdir=$dest/pc-static
mkdir -p "$pcdir"
sed "s|^\([a-z]*\)=$prefix|\1=$dest$prefix|" "$lib/pkgconfig/hugekv.pc" > "$pcdir/hugekv.pc"
if pkg-config --exists numa; then
	grep -qx 'Requires.private: numa' "$pcdir/hugekv.pc"
	! grep -q -- '-lnuma' "$pcdir/hugekv.pc"
fi
static_libs=$(env -u PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR="$pcdir:$syspc" \
	pkg-config --static --libs hugekv)
case " $static_libs " in *" -lnuma "*) ;; *) echo "check-install: pkg-config --static" \
	"--libs hugekv names no libnuma: $static_libs" >&2; exit 1 ;; esac
# (libnuma.a's getaddrinfo draws a linker warning: shown only on failure)
cc -static -Wall -Werror -I"$dest$prefix/include" "$dest/use.c" $static_libs \
	-o "$dest/use-static" 2> "$dest/static.err" || { cat "$dest/static.err" >&2; exit 1; }
"$dest/use-static"
# nothing but the API is exported
n=$(nm -D --defined-only "$lib/libhugekv.so.0" | awk '$2 == "T"' | grep -vc ' hkv_' || true)
test "$n" = 0
echo "check-install: installed library, header and hugekv.pc work (shared and static): 2 passed, 0 failed"
